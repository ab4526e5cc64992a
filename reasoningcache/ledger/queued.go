package ledger

import "context"

// ResolveIntentQueued is ResolveIntent without waiting for the commit: when
// it returns, the resolve is in the writer's queue, which the writer takes
// in order, so every write submitted afterwards (the next request's
// CreateIntent at the same start, say) is applied after it. Nobody on a
// request's path waits for it, so the writer may hold it up to
// QueuedCommitDelay to commit it with the next write. wait blocks until it
// is committed and returns what ResolveIntent would have.
func (s *Store) ResolveIntentQueued(ctx context.Context, intentID int64) (wait func() error) {
	return s.queued(ctx, "resolve_intent", true, resolveIntent(intentID))
}

// PoisonIntentQueued is PoisonIntent without waiting for the commit, in
// the same order and with the same delay as ResolveIntentQueued.
func (s *Store) PoisonIntentQueued(ctx context.Context, intentID int64, reason string) (wait func() error) {
	return s.poisonIntent(ctx, intentID, reason, true)
}

// poisonIntent validates reason and enqueues the poison.
func (s *Store) poisonIntent(ctx context.Context, intentID int64, reason string, queued bool) (wait func() error) {
	const op = "poison_intent"
	if reason == "" || len(reason) > 64 {
		err := invalid(op, ReasonInvalidArgument, "reason code must be 1 to 64 bytes")
		return func() error { return err }
	}
	return s.queued(ctx, op, queued, poisonIntent(intentID, reason))
}

// queued enqueues apply, an intent end (resolve or poison), and returns
// the wait for its commit; submit is enqueue and that wait in one call.
// queued marks an operation whose commit nobody waits for on a request's
// path.
func (s *Store) queued(ctx context.Context, op string, queued bool, apply applyFunc) func() error {
	r, err := s.enqueue(ctx, op, false, queued, apply)
	if err != nil {
		return func() error { return err }
	}
	s.ends.queued() // an intent end: CreateIntent may be waiting for it
	return func() error {
		<-r.done
		return r.err
	}
}
