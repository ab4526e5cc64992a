package ledger

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// wtx is what an operation sees: the writer's connection inside the
// batch's transaction and the batch's clock. Operations must not keep it.
type wtx struct {
	dbtx
	ctx context.Context
	now time.Time
	s   *Store
	// onCommit runs after the batch committed (cache upkeep only).
	onCommit []func()
}

func (w *wtx) nowMs() int64 { return w.now.UnixMilli() }

// applyFunc is one write operation: it validates against the state left
// by the operations before it and applies its changes, or returns an
// error and is rolled back to its savepoint.
type applyFunc func(w *wtx) error

type request struct {
	ctx      context.Context
	name     string
	apply    applyFunc
	internal bool // allowed while disabled
	err      error
	onCommit []func()
	done     chan struct{}
}

type storeStats struct {
	batches atomic.Int64
	ops     atomic.Int64
	maxSize atomic.Int64
}

// Stats are counters of the writer since Open.
type Stats struct {
	Batches  int64 `json:"batches"`    // transactions committed or attempted
	Ops      int64 `json:"operations"` // operations applied (including failed ones)
	MaxBatch int64 `json:"max_batch"`  // largest batch seen
}

// Stats returns the writer's counters.
func (s *Store) Stats() Stats {
	return Stats{Batches: s.stats.batches.Load(), Ops: s.stats.ops.Load(), MaxBatch: s.stats.maxSize.Load()}
}

// submit hands one operation to the writer and waits until its batch has
// committed (or failed). The result is the operation's own error, or the
// batch's commit error. If ctx ends before the writer reaches the
// operation, the operation is skipped and ctx's error returned; once the
// writer has applied it, the caller always waits for the COMMIT, so an
// error never hides a committed operation.
func (s *Store) submit(ctx context.Context, name string, internal bool, apply applyFunc) error {
	r := &request{ctx: ctx, name: name, apply: apply, internal: internal, done: make(chan struct{})}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	if !internal && !s.enabled.Load() {
		s.mu.RUnlock()
		return ErrDisabled
	}
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	s.mu.RUnlock()
	<-r.done
	return r.err
}

// writer is the single goroutine that writes. It takes whatever
// operations are queued (up to MaxBatch) and commits them together. While
// one batch waits for its fsync the next one accumulates, so batches grow
// with load and need no timer.
func (s *Store) writer() {
	defer close(s.done)
	batch := make([]*request, 0, s.opts.MaxBatch)
	for {
		batch = batch[:0]
		select {
		case r := <-s.reqs:
			batch = append(batch, r)
		case <-s.quit:
			// Close holds no submitters any more: answer what was accepted.
			for {
				select {
				case r := <-s.reqs:
					batch = append(batch, r)
					if len(batch) == cap(batch) {
						s.runBatch(batch)
						batch = batch[:0]
					}
				default:
					if len(batch) > 0 {
						s.runBatch(batch)
					}
					return
				}
			}
		}
	fill:
		for len(batch) < cap(batch) {
			select {
			case r := <-s.reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		s.runBatch(batch)
	}
}

func (s *Store) runBatch(batch []*request) {
	s.stats.batches.Add(1)
	s.stats.ops.Add(int64(len(batch)))
	if n := int64(len(batch)); n > s.stats.maxSize.Load() {
		s.stats.maxSize.Store(n)
	}
	ctx := context.Background() // request contexts must not interrupt a shared transaction
	c := preparedTx{s.wstmts}
	began := time.Now()
	err := s.applyBatch(ctx, batch)
	if f := s.opts.ObserveBatch; f != nil {
		f(len(batch), time.Since(began), err == nil)
	}
	if err != nil {
		_, _ = c.ExecContext(ctx, "ROLLBACK")
		for _, r := range batch {
			if r.err == nil {
				r.err = err
			}
			// An operation that failed alone keeps its own error: it
			// changed nothing either way.
		}
	} else {
		crashPoint(crashAfterCommit)
		for _, r := range batch {
			if r.err == nil {
				for _, f := range r.onCommit {
					f()
				}
			}
		}
	}
	for _, r := range batch {
		close(r.done)
	}
}

// applyBatch runs BEGIN, one savepoint per operation, and COMMIT. It
// returns an error only when the whole batch failed.
func (s *Store) applyBatch(ctx context.Context, batch []*request) error {
	c := preparedTx{s.wstmts}
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("ledger: begin batch: %w", err)
	}
	crashPoint(crashBatchBegun)
	now := s.opts.Now()
	for i, r := range batch {
		if i > 0 {
			crashPoint(crashBetweenSavepoints)
		}
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		if !r.internal && !s.enabled.Load() {
			r.err = ErrDisabled
			continue
		}
		if _, err := c.ExecContext(ctx, "SAVEPOINT op"); err != nil {
			return fmt.Errorf("ledger: savepoint: %w", err)
		}
		w := &wtx{dbtx: c, ctx: ctx, now: now, s: s}
		opErr := safeApply(w, r)
		if opErr != nil {
			if _, err := c.ExecContext(ctx, "ROLLBACK TO op"); err != nil {
				return fmt.Errorf("ledger: rollback %s: %w", r.name, err)
			}
			if !isValidation(opErr) {
				opErr = fmt.Errorf("ledger: %s: %w", r.name, opErr)
			}
		} else {
			r.onCommit = w.onCommit
		}
		if _, err := c.ExecContext(ctx, "RELEASE op"); err != nil {
			return fmt.Errorf("ledger: release savepoint: %w", err)
		}
		r.err = opErr
	}
	crashPoint(crashBeforeCommit)
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("ledger: commit batch: %w", err)
	}
	return nil
}

func safeApply(w *wtx, r *request) (err error) {
	defer func() {
		if p := recover(); p != nil {
			w.s.log.Error("ledger operation panicked")
			err = fmt.Errorf("panic in operation %s: %v\n%s", r.name, p, debug.Stack())
		}
	}()
	return r.apply(w)
}

func isValidation(err error) bool {
	var ve *ValidationError
	return errors.As(err, &ve)
}
