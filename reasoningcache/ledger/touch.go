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
// make a payload's idle age look older by one maintenance interval).
const maxPendingTouches = 1 << 16

// touches collects payload touches noted on the read path (a retained
// record the planner inspected and validated) so that they reach the
// database in one batched write per maintenance tick instead of one
// commit per request.
type touches struct {
	mu      sync.Mutex
	pending map[int64]int64 // payload id -> latest touch, Unix ms
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

// touchPayloadsOf touches the payloads of plan blocks: selected for dispatch or
// referenced by a recorded answer. Inside the operation's transaction.
// Payloads touched within TouchGranularity are left as they are: their
// rows, pages and index entries stay out of the commit.
func (w *wtx) touchPayloadsOf(planJSON string) error {
	_, err := w.ExecContext(w.ctx, `
		UPDATE payloads SET touched_at = ?
		WHERE payload_id IN (SELECT j.value ->> 'payload_id' FROM json_each(?) AS j) AND touched_at < ?`,
		w.nowMs(), planJSON, touchDue(w.nowMs()))
	return err
}

// touchPayload is touchPayloadsOf for one payload.
func (w *wtx) touchPayload(id int64) error {
	_, err := w.ExecContext(w.ctx, `UPDATE payloads SET touched_at = ? WHERE payload_id = ? AND touched_at < ?`,
		w.nowMs(), id, touchDue(w.nowMs()))
	return err
}
