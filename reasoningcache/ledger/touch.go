package ledger

import (
	"context"
	"sync"
)

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
// touched_at = max(existing, now). Unknown ids are ignored when written.
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
				UPDATE payloads SET touched_at = max(touched_at, j.value ->> 't')
				FROM json_each(?) AS j WHERE payloads.payload_id = j.value ->> 'i'`, keys)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// touchPayloadsOf touches the payloads of plan blocks: selected for dispatch or
// referenced by a recorded answer. Inside the operation's transaction.
func (w *wtx) touchPayloadsOf(planJSON string) error {
	_, err := w.ExecContext(w.ctx, `
		UPDATE payloads SET touched_at = max(touched_at, ?)
		WHERE payload_id IN (SELECT j.value ->> 'payload_id' FROM json_each(?) AS j)`, w.nowMs(), planJSON)
	return err
}
