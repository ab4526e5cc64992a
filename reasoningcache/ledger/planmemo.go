package ledger

import "sync"

// planMemo keeps what the planner reads of observations and payloads
// that cannot change while the rows exist, so that a replay hit reads
// them from the database once instead of on every request: an
// observation's row with its recorded plan, and its payload's metadata.
//
// It is exact, not a guess, because of how the ledger writes (the store
// is the database's only writer, see lock.go, and every write goes
// through the writer goroutine):
//   - observations are never deleted, and the only statement that changes
//     one is Cleanup's unlink (it clears payload_id and replayable and
//     bumps row_version); a payload's output, size and fingerprint never
//     change, and only Cleanup deletes payloads (their ids may then be
//     reused);
//   - entries come from the read pool, which sees committed rows only;
//   - Cleanup resets the memo after its commit succeeded (its onCommit),
//     and a reset also advances the epoch: an entry read before a reset
//     is inserted only if no reset happened since its reader took the
//     epoch, before its statement began. A row read before the commit
//     and inserted after the reset is therefore refused, and one inserted
//     before the reset is dropped by it.
//
// Everything else the planner needs (the scope's generation, candidates,
// markers, unresolved intents, model snapshots) changes with every turn
// and is read with one statement per plan (PlanState). The writer still
// revalidates every plan in the transaction that commits its intent.
type planMemo struct {
	mu       sync.Mutex
	epoch    uint64
	max      int // entries of either map before a reset
	maxBytes int // bytes of stored plans before a reset
	bytes    int
	obs      map[int64]memoObs
	pays     map[int64]payloadMeta
}

// memoObs is one observation as the planner reads it.
type memoObs struct {
	o         Observation // PriorPlan nil
	planCount int64
	planBytes int64  // length(prior_plan)
	prior     string // prior_plan; "" also when over MaxPlanBytes (tooLarge)
	tooLarge  bool   // prior_plan over MaxPlanBytes: not loaded
	parent    int64  // parent_id (0 if NULL)
}

// defaultMemoEntries and defaultMemoPlanBytes bound the memo: a
// conversation needs one entry per turn (linked plans store no JSON), and
// a reset only costs the next plans a read each.
const (
	defaultMemoEntries   = 4096
	defaultMemoPlanBytes = 4 << 20
)

func newPlanMemo(max, maxBytes int) *planMemo {
	return &planMemo{max: max, maxBytes: maxBytes, obs: make(map[int64]memoObs), pays: make(map[int64]payloadMeta)}
}

// begin returns the epoch a reader must pass to put, taken before its
// statement begins.
func (m *planMemo) begin() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch
}

// observation returns the memo's entry for id.
func (m *planMemo) observation(id int64) (memoObs, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.obs[id]
	return e, ok
}

// payload returns the memo's metadata of payload id.
func (m *planMemo) payload(id int64) (payloadMeta, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pays[id]
	return p, ok
}

// put stores rows read after begin returned epoch, unless the memo was
// reset since.
func (m *planMemo) put(epoch uint64, obs []memoObs, pays []payloadMeta) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if epoch != m.epoch {
		return
	}
	n := 0
	for _, e := range obs {
		n += len(e.prior)
	}
	if len(m.obs)+len(obs) > m.max || len(m.pays)+len(pays) > m.max || m.bytes+n > m.maxBytes {
		m.resetLocked()
	}
	for _, e := range obs {
		if old, ok := m.obs[e.o.ID]; ok {
			m.bytes -= len(old.prior)
		}
		m.obs[e.o.ID] = e
		m.bytes += len(e.prior)
	}
	for _, p := range pays {
		m.pays[p.p.ID] = p
	}
}

// reset empties the memo and refuses rows read before it.
func (m *planMemo) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resetLocked()
}

func (m *planMemo) resetLocked() {
	m.epoch++
	m.bytes = 0
	clear(m.obs)
	clear(m.pays)
}
