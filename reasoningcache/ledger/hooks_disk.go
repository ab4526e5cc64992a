package ledger

// testHookReserveReleased, when set by tests before Open, runs on the
// writer goroutine right after a safety write released the reserve and
// before it retries.
var testHookReserveReleased func(s *Store)
