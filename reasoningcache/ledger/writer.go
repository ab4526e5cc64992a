package ledger

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
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
	// queued: no caller waits for its commit on a request's path, so the
	// writer may hold it for the next write (see awaitCompany).
	queued   bool
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
	r, err := s.enqueue(ctx, name, internal, false, apply)
	if err != nil {
		return err
	}
	<-r.done
	return r.err
}

// enqueue is submit without the wait: once it returns, the operation is
// in the writer's queue, which the writer takes in order, so every
// operation enqueued later is applied after it. The caller waits on
// r.done and then reads r.err. A queued operation may wait up to
// QueuedCommitDelay for company before its batch starts.
func (s *Store) enqueue(ctx context.Context, name string, internal, queued bool, apply applyFunc) (*request, error) {
	r := &request{ctx: ctx, name: name, apply: apply, internal: internal, queued: queued, done: make(chan struct{})}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	if !internal && s.life.guarded.Load() {
		return nil, ErrGuarded
	}
	if !internal && !s.enabled.Load() {
		return nil, ErrDisabled
	}
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return r, nil
}

// writer is the single goroutine that writes. It takes whatever
// operations are queued (up to MaxBatch) and commits them together. While
// one batch waits for its fsync the next one accumulates, so batches grow
// with load and need no timer. Only a batch of queued operations alone
// waits, briefly, for company (awaitCompany).
func (s *Store) writer() {
	defer close(s.done)
	batch := make([]*request, 0, s.opts.MaxBatch)
	for {
		s.writerCheckpoint()
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
		batch = s.fill(batch)
		if onlyQueued(batch) {
			batch = s.awaitCompany(batch)
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
	s.life.lastWrite.Store(time.Now().UnixNano())
	err := s.apply(batch)
	var be *beginError
	switch {
	case err == nil:
		s.committed(batch)
	case len(batch) > 1 && !errors.As(err, &be):
		// One operation (or the shared COMMIT) failed in a way that took
		// the whole transaction with it, typically SQLITE_FULL or an I/O
		// error. Run each operation in its own transaction, so that each
		// fails alone with its own error and the others commit.
		s.rollback()
		for _, r := range batch {
			r.err, r.onCommit = nil, nil
			s.runAlone(r)
		}
	default:
		s.rollback()
		for _, r := range batch {
			if r.err == nil {
				r.err = err
			}
			// An operation that failed alone keeps its own error: it
			// changed nothing either way.
		}
		if len(batch) == 1 {
			s.retrySafety(batch[0])
		}
	}
	for _, r := range batch {
		close(r.done)
	}
}

// runAlone applies one operation in its own transaction.
func (s *Store) runAlone(r *request) {
	if !s.runOne(r) {
		s.retrySafety(r)
	}
}

// runOne applies one operation in its own transaction and reports whether
// it committed; when it did not, r.err holds why.
func (s *Store) runOne(r *request) bool {
	s.stats.batches.Add(1)
	one := []*request{r}
	if err := s.apply(one); err != nil {
		s.rollback()
		if r.err == nil {
			r.err = err
		}
		return false
	}
	s.committed(one)
	return true
}

// safetyOps are the operations whose failure would leave the cache unable
// to fence what it does not observe: intents, observations, poison and
// fencing. On a full disk or an I/O error they get the reserve.
var safetyOps = map[string]bool{
	"create_intent": true, "commit_observation": true, "poison_intent": true,
	"write_markers": true, "expire_intents": true, "expire_orphan_intents": true,
	"advance_generations": true, "fence": true,
}

// retrySafety handles an operation that failed alone. A capacity failure
// (full disk, I/O error) stops payload admission; for a safety write it
// also releases the reserve and retries the operation's transaction once
// (a local retry: no model request is ever resent). If that fails too,
// the guard latches and the operation's error says so (it matches
// ErrGuarded and ErrDisabled, so its request is relayed without the
// cache).
func (s *Store) retrySafety(r *request) {
	if !isCapacityError(r.err) {
		return
	}
	s.life.pressure.Store(true)
	if !safetyOps[r.name] || r.ctx.Err() != nil {
		return
	}
	freed := s.reserve.release()
	s.log.Warn("ledger: a safety write failed for lack of room or an I/O error; released the reserve, retrying once",
		zap.String("op", r.name), zap.Int64("released_bytes", freed), zap.Error(r.err))
	if h := testHookReserveReleased; h != nil {
		h(s)
	}
	r.err, r.onCommit = nil, nil
	if !s.runOne(r) && isCapacityError(r.err) {
		s.latchGuard(r.err)
		r.err = fmt.Errorf("%w: %w", ErrGuarded, r.err)
	}
}

// committed runs the cache upkeep of a committed batch's operations.
func (s *Store) committed(batch []*request) {
	crashPoint(crashAfterCommit)
	for _, r := range batch {
		if r.err == nil {
			for _, f := range r.onCommit {
				f()
			}
		}
	}
}

// rollback ends the writer's transaction, if SQLite has not already.
func (s *Store) rollback() {
	_, _ = preparedTx{s.wstmts}.ExecContext(context.Background(), "ROLLBACK")
}

// beginError is a batch that failed before any operation ran: running its
// operations one by one would only repeat the failure.
type beginError struct{ err error }

func (e *beginError) Error() string { return "ledger: begin batch: " + e.err.Error() }
func (e *beginError) Unwrap() error { return e.err }

// apply runs one transaction of operations and reports it to
// Options.ObserveBatch. Request contexts must not interrupt a shared
// transaction, so it runs under the background context.
func (s *Store) apply(batch []*request) error {
	began := time.Now()
	err := s.applyBatch(context.Background(), batch)
	if f := s.opts.ObserveBatch; f != nil {
		f(len(batch), time.Since(began), err == nil)
	}
	return err
}

// applyBatch runs BEGIN, one savepoint per operation, and COMMIT. It
// returns an error only when the whole batch failed.
func (s *Store) applyBatch(ctx context.Context, batch []*request) error {
	c := preparedTx{s.wstmts}
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return &beginError{err}
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
		if !r.internal && s.life.guarded.Load() {
			r.err = ErrGuarded
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
			if !isValidation(opErr) {
				opErr = fmt.Errorf("ledger: %s: %w", r.name, opErr)
			}
			if _, err := c.ExecContext(ctx, "ROLLBACK TO op"); err != nil {
				// SQLite rolled back the whole transaction (it may on
				// SQLITE_FULL or an I/O error): the savepoint is gone,
				// and the operation's own error is the real cause.
				r.err = opErr
				return fmt.Errorf("ledger: %s rolled back the batch: %w", r.name, opErr)
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
