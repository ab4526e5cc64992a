package ledger

import "time"

// QueuedCommitDelay is how long the writer holds a batch made only of
// queued operations (a delivered request's resolve, see
// ResolveIntentQueued) for another operation to share its transaction.
//
// A resolve is queued when a response has been delivered, and the next
// request of the conversation sends its intent a few milliseconds later
// (at concurrency 1: the client's round trip, parsing, the plan reads; in
// the load harness 1-2 ms for most 20 KB and 200 KB hits, over 5 ms for
// one 200 KB hit in ten on a loaded machine).
// Committed alone, the resolve's fsync was still running when that intent
// arrived, so the intent, which dispatch waits for, waited behind it. Held
// briefly instead, the resolve rides in the intent's own transaction: one
// commit and one fsync where there were two, and pages both change (the
// intents table and its indexes) written once.
//
// Nothing waiting on a request's path is delayed: any other operation
// releases the batch at once, and the first operation of a batch is
// never held unless it is queued. What grows is the window in which a
// crash finds the delivered request's intent unresolved, by at most this
// delay: startup then poisons its positions, as it does for any request
// whose end was not recorded. Its observation was already committed
// before the terminal chunk.
const QueuedCommitDelay = 10 * time.Millisecond

// queuedCommitDelay is QueuedCommitDelay; tests change it.
var queuedCommitDelay = QueuedCommitDelay

// onlyQueued reports whether every operation of batch is queued.
func onlyQueued(batch []*request) bool {
	for _, r := range batch {
		if !r.queued {
			return false
		}
	}
	return true
}

// awaitCompany holds a batch of queued operations until another operation
// arrives, QueuedCommitDelay passes, the batch is full or the store
// closes, and returns it with whatever arrived, in queue order.
func (s *Store) awaitCompany(batch []*request) []*request {
	t := time.NewTimer(queuedCommitDelay)
	defer t.Stop()
	for len(batch) < cap(batch) {
		select {
		case r := <-s.reqs:
			batch = append(batch, r)
			if !r.queued {
				return s.fill(batch)
			}
		case <-t.C:
			return batch
		case <-s.quit:
			return batch
		}
	}
	return batch
}

// fill adds the operations already queued, without waiting, up to the
// batch's capacity.
func (s *Store) fill(batch []*request) []*request {
	for len(batch) < cap(batch) {
		select {
		case r := <-s.reqs:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}
