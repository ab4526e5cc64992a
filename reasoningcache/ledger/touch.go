package ledger

import (
	"context"
	"sync"
	"time"
)

// TouchGranularity is how old a payload's touched_at must be before a use
// writes it again. Retention is measured in days (at least
// MinRetention), so a touch every few minutes loses nothing, while a
// touch per request rewrote every replayed payload's row and its index
// entry in each intent and observation commit, about half of their WAL
// frames. Cleanup adds it to the cutoff, so a payload is still deleted
// only after Retention without any use.
const TouchGranularity = 10 * time.Minute

// touchDue is the touched_at below which a touch at nowMs writes.
func touchDue(nowMs int64) int64 { return nowMs - TouchGranularity.Milliseconds() }

// maxPendingTouches bounds the touches held in memory between flushes;
// past it the oldest-noted are simply dropped (a missed touch can only
// make a payload's idle age look older by one maintenance interval). It
// also bounds the writer's memory of written touches.
const maxPendingTouches = 1 << 16

// touches collects payload touches noted on the read path (a retained
// record the planner inspected and validated) so that they reach the
// database in one batched write per maintenance tick instead of one
// commit per request.
type touches struct {
	mu      sync.Mutex
	pending map[int64]int64 // payload id -> latest touch, Unix ms
	// written is, per payload id, when the writer last committed a touch
	// of it (Unix ms); only the writer goroutine uses it (see touch).
	written map[int64]int64
}

// NoteTouched records that the planner inspected and validated the given
// payloads now. The touches are written in the background, batched, with
// touched_at = max(existing, now), to payloads not touched within
// TouchGranularity. Unknown ids are ignored when written.
func (s *Store) NoteTouched(ids ...int64) {
	if len(ids) == 0 {
		return
	}
	now := s.opts.Now().UnixMilli()
	t := &s.touched
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil {
		t.pending = make(map[int64]int64)
	}
	for _, id := range ids {
		if id <= 0 {
			continue
		}
		if len(t.pending) >= maxPendingTouches {
			return
		}
		if t.pending[id] < now {
			t.pending[id] = now
		}
	}
}

// flushTouches writes the pending touches in one operation.
func (s *Store) flushTouches(ctx context.Context) error {
	t := &s.touched
	t.mu.Lock()
	pending := t.pending
	t.pending = nil
	t.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	type touch struct {
		ID int64 `json:"i"`
		At int64 `json:"t"`
	}
	list := make([]touch, 0, len(pending))
	for id, at := range pending {
		list = append(list, touch{id, at})
	}
	for len(list) > 0 {
		n := min(len(list), maxBulk)
		keys, err := jsonKeys("touch_payloads", list[:n])
		if err != nil {
			return err
		}
		list = list[n:]
		if err := s.submit(ctx, "touch_payloads", false, func(w *wtx) error {
			_, err := w.ExecContext(w.ctx, `
				UPDATE payloads SET touched_at = j.value ->> 't'
				FROM json_each(?) AS j WHERE payloads.payload_id = j.value ->> 'i'
				AND payloads.touched_at < (j.value ->> 't') - ?`, keys, TouchGranularity.Milliseconds())
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// touch touches payloads (selected for dispatch, or referenced by a
// recorded answer) in the operation's transaction. The writer remembers
// when it last wrote each payload's touch, a lower bound of its
// touched_at (touches only move it forward): a payload written within
// TouchGranularity costs no statement at all, and the others are written
// with max(touched_at, now), in one statement, and remembered once the
// batch has committed. Checking touched_at in SQL instead would read each
// payload's row through its overflow pages, touched_at being stored after
// the output.
func (w *wtx) touch(ids ...int64) error {
	t := &w.s.touched
	now := w.nowMs()
	due := touchDue(now)
	var stale []int64
	for _, id := range ids {
		if at, ok := t.written[id]; id > 0 && (!ok || at < due) {
			stale = append(stale, id)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	keys, err := jsonKeys("touch_payloads", stale)
	if err != nil {
		return err
	}
	if _, err := w.ExecContext(w.ctx, `
		UPDATE payloads SET touched_at = max(touched_at, ?) WHERE payload_id IN (SELECT value FROM json_each(?))`,
		now, keys); err != nil {
		return err
	}
	w.onCommit = append(w.onCommit, func() { t.wrote(stale, now) })
	return nil
}

// wrote remembers touches the writer committed. Writer goroutine only.
func (t *touches) wrote(ids []int64, at int64) {
	if t.written == nil {
		t.written = make(map[int64]int64)
	}
	if len(t.written)+len(ids) > maxPendingTouches {
		due := touchDue(at)
		for id, w := range t.written {
			if w < due {
				delete(t.written, id)
			}
		}
		if len(t.written)+len(ids) > maxPendingTouches {
			clear(t.written) // forgetting costs a write, never a touch
		}
	}
	for _, id := range ids {
		t.written[id] = at
	}
}

// planPayloads returns the payload ids of a plan's blocks.
func planPayloads(plan []PlanBlock) []int64 {
	ids := make([]int64, len(plan))
	for i, b := range plan {
		ids[i] = b.PayloadID
	}
	return ids
}
