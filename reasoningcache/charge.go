package reasoningcache

import "sync"

// The charge of a session is what its request really holds while the
// session lives, measured rather than assumed:
//
//   - SessionBase, for the session and its digests;
//   - the visible history and the translated input, byte for byte (the
//     envelopes the client sent and what they became);
//   - the replayed output items, once the plan has loaded them;
//   - the recorded output, as the recording grows (GrowRecord), and at
//     Complete the output the engine checks and the payload it commits.
//
// A charge only grows while the session lives and is returned whole when
// it ends. Growth that the budget cannot hold is refused: a plan is then
// dispatched without replay, and a recording stops and poisons its position
// (record_over_budget), so a refused charge never becomes a wrong replay.

// recordChunk is the step in which a recording's charge grows, so that a
// stream of small events does not take the engine's lock for each.
const recordChunk = 64 << 10

// requestCharge is what Prepare charges a request up front: the session
// base, its history and its translated input.
func requestCharge(req *Request) int64 {
	n := int64(SessionBase)
	for _, env := range req.History {
		n += int64(len(env))
	}
	for _, it := range req.Input {
		n += int64(len(it))
	}
	return n
}

// recording is the charge accounting of one session's recorded output.
type recording struct {
	mu      sync.Mutex
	used    int64 // bytes the recording holds
	charged int64 // bytes charged to the lease for it
	refused bool  // the budget refused it: the output is not known
}

// GrowRecord charges n more bytes of recorded upstream output to the
// session (the adapter calls it before keeping them) and reports whether
// the memory budget holds them. After the first false it always reports
// false: the recording must stop keeping output, and Complete then poisons
// the request's position (record_over_budget) whatever output it is
// given. A session that does not record (pass-through, ended) reports
// false. It is safe to call from any goroutine.
func (s *Session) GrowRecord(n int64) bool {
	if n < 0 || s.lease == nil {
		return false
	}
	c := &s.rec
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.cover(s.lease, c.used+n, recordChunk) {
		return false
	}
	c.used += n
	return true
}

// cover makes the charge at least need bytes, growing the lease by at
// least step at a time. It reports false, now and from then on, when the
// budget refuses.
func (c *recording) cover(l *lease, need, step int64) bool {
	if c.refused {
		return false
	}
	if need > c.charged {
		n := max(need-c.charged, step)
		if !l.grow(n) {
			c.refused = true
			return false
		}
		c.charged += n
	}
	return true
}

// chargeOutcome makes sure the lease holds what Complete works on: the
// recorded copies and the payload joined from them. It reports false when
// the budget refused the recording now or earlier.
func (s *Session) chargeOutcome(out *Outcome, payload int64) bool {
	var held int64
	for _, it := range out.Output {
		held += int64(len(it))
	}
	for _, it := range out.DoneItems {
		held += int64(len(it))
	}
	if s.lease == nil {
		return false
	}
	c := &s.rec
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cover(s.lease, held+payload, 0)
}
