package ledger

import "time"

// Clock is the ledger's time source. Wall time stamps rows and decides a
// payload's idle age; the monotonic reading measures the restart barrier
// and detects steps of the wall clock. Tests inject a fake one through
// Options.Clock.
type Clock interface {
	// Now returns the wall-clock time.
	Now() time.Time
	// Monotonic returns a reading of a clock that never steps, as a
	// duration since an arbitrary origin fixed for the process.
	Monotonic() time.Duration
}

// systemClock is the real clock. Its monotonic origin is the time the
// store was opened.
type systemClock struct{ origin time.Time }

func (c systemClock) Now() time.Time { return time.Now() }

func (c systemClock) Monotonic() time.Duration { return time.Since(c.origin) }

// funcClock adapts Options.Now (a wall clock only) to Clock, measuring
// monotonic time with the real clock.
type funcClock struct {
	now    func() time.Time
	origin time.Time
}

func (c funcClock) Now() time.Time { return c.now() }

func (c funcClock) Monotonic() time.Duration { return time.Since(c.origin) }
