//go:build unix

package ledger

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Crash tests: a re-executed child process writes through the real API and
// prints an acknowledgement only after each call returned; the parent kills
// it with SIGKILL, at a named crash point (the child kills itself there) or
// at a random time, reopens the database and checks it.
//
// LEDGER_CRASH_KILLS sets how many kills to run (default 20).

const (
	envChild   = "LEDGER_CRASH_CHILD"
	envDB      = "LEDGER_CRASH_DB"
	envPoint   = "LEDGER_CRASH_AT"
	envAfter   = "LEDGER_CRASH_AFTER"
	envRun     = "LEDGER_CRASH_RUN"
	envKills   = "LEDGER_CRASH_KILLS"
	childLimit = 20 * time.Second
)

var namedPoints = []string{crashBatchBegun, crashBetweenSavepoints, crashBeforeCommit, crashAfterCommit, crashRecovery}

func TestCrashChild(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		t.Skip("runs only as the crash test's child process")
	}
	if point := os.Getenv(envPoint); point != "" {
		after, _ := strconv.Atoi(os.Getenv(envAfter))
		var mu sync.Mutex
		seen := 0
		crashHook = func(p string) {
			if p != point {
				return
			}
			mu.Lock()
			seen++
			n := seen
			mu.Unlock()
			if n >= after {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // never return from the crash point
			}
		}
	}
	s, err := Open(os.Getenv(envDB), Options{})
	if err != nil {
		fmt.Printf("OPENFAIL %v\n", err)
		os.Exit(2)
	}
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		_, _ = os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n")
	}
	say("READY")
	run := os.Getenv(envRun)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			sc := testScope(w % 3)
			start := dig("run %s w %d start", run, w)
			var plan []PlanBlock
			var gen int64
			for i := 0; ; i++ {
				if plan != nil {
					var err error
					if gen, err = s.ScopeGeneration(ctx, sc.ID); err != nil {
						say("ERR %v", err)
						return
					}
				}
				id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: gen, StartDigest: start, Plan: plan})
				if err != nil {
					// Plans can go stale; try again without one.
					plan, gen = nil, 0
					if id, err = s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: start}); err != nil {
						say("ERR create %v", err)
						return
					}
				}
				say("ACK intent %d %s %s", id, sc.ID, start)
				end := dig("run %s w %d end %d", run, w, i)
				res, err := s.CommitObservation(ctx, CommitObservationRequest{IntentID: id, EndDigest: end,
					EnvelopeFP: dig("env %s", end), PayloadFP: dig("payload %s", end), OutputHash: dig("out %s", end),
					Replayable: true, Payload: []byte(fmt.Sprintf(`{"run":%q,"w":%d,"i":%d}`, run, w, i)), MoveToDelivery: true})
				if err != nil {
					say("ERR commit %v", err)
					return
				}
				say("ACK obs %d %s %s %d", res.ObservationID, sc.ID, end, res.PayloadID)
				switch rng.IntN(4) {
				case 0: // leave some intents unresolved, as a crash would
				case 1: // queued, as a delivered request does: the next write carries it
					say("SENT resolve %d", id)
					wait := s.ResolveIntentQueued(ctx, id)
					go func() {
						if err := wait(); err != nil {
							say("ERR resolve %v", err)
							return
						}
						say("ACK resolve %d", id)
					}()
				default:
					say("SENT resolve %d", id)
					if err := s.ResolveIntent(ctx, id); err != nil {
						say("ERR resolve %v", err)
						return
					}
					say("ACK resolve %d", id)
				}
				if rng.IntN(5) == 0 {
					d := dig("run %s w %d marker %d", run, w, i)
					if _, err := s.WriteMarkers(ctx, sc, []Marker{{Kind: MarkerEndConflict, Digest: d, Reason: "test"}}); err != nil {
						say("ERR marker %v", err)
						return
					}
					say("ACK marker %s %s", sc.ID, d)
				}
				plan = append(plan, PlanBlock{ObservationID: res.ObservationID, PayloadID: res.PayloadID, EndDigest: end})
				if len(plan) > 4 {
					plan = plan[1:]
				}
				gen = 1
				start = end
			}
		}(w)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(childLimit):
	}
	say("TIMEOUT")
	os.Exit(3)
}

type childAcks struct {
	intents  map[int64][2]string // id -> scope, start
	resolved map[int64]bool      // SENT resolve (acknowledged or not)
	acked    map[int64]bool      // ACK resolve: its commit returned
	obs      map[int64][3]string // id -> scope, end, payload id
	markers  [][2]string         // scope, digest
	ready    bool
	other    []string
}

func runChild(t *testing.T, db, run, point string, after int, killAfter time.Duration) (childAcks, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChild+"=1", envDB+"="+db, envRun+"="+run, envPoint+"="+point,
		envAfter+"="+strconv.Itoa(after))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acks := childAcks{intents: map[int64][2]string{}, resolved: map[int64]bool{}, acked: map[int64]bool{}, obs: map[int64][3]string{}}
	readyc := make(chan struct{})
	parsed := make(chan struct{})
	go func() {
		defer close(parsed)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 1 && f[0] == "READY":
				acks.ready = true
				close(readyc)
			case len(f) == 5 && f[0] == "ACK" && f[1] == "intent":
				id, _ := strconv.ParseInt(f[2], 10, 64)
				acks.intents[id] = [2]string{f[3], f[4]}
			case len(f) == 6 && f[0] == "ACK" && f[1] == "obs":
				id, _ := strconv.ParseInt(f[2], 10, 64)
				acks.obs[id] = [3]string{f[3], f[4], f[5]}
			case len(f) == 3 && f[0] == "SENT" && f[1] == "resolve":
				id, _ := strconv.ParseInt(f[2], 10, 64)
				acks.resolved[id] = true
			case len(f) == 3 && f[0] == "ACK" && f[1] == "resolve":
				id, _ := strconv.ParseInt(f[2], 10, 64)
				acks.acked[id] = true
			case len(f) == 4 && f[0] == "ACK" && f[1] == "marker":
				acks.markers = append(acks.markers, [2]string{f[2], f[3]})
			default:
				acks.other = append(acks.other, sc.Text())
			}
		}
	}()
	if point == "" {
		select {
		case <-readyc:
			time.Sleep(killAfter)
		case <-time.After(childLimit):
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
	}
	<-parsed
	err = cmd.Wait()
	how := "exited"
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			how = "killed"
		}
	}
	return acks, how
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	if os.Getenv(envChild) == "1" {
		t.Skip("child")
	}
	kills := 20
	if v := os.Getenv(envKills); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive integer", envKills, v)
		}
		kills = n
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	ran := 0

	// Kill inside the first migration, then check the database opens.
	mdb := filepath.Join(dir, "migrate.sqlite")
	if acks, how := runChild(t, mdb, "m", crashMigration, 1, 0); how != "killed" || acks.ready {
		t.Fatalf("migration crash: child %s (ready=%v, output %q)", how, acks.ready, acks.other)
	}
	ran++
	verifyAfterCrash(t, mdb, childAcks{})

	db := filepath.Join(dir, "crash.sqlite")
	var all childAcks
	all.intents, all.resolved, all.acked, all.obs = map[int64][2]string{}, map[int64]bool{}, map[int64]bool{}, map[int64][3]string{}
	byPoint := map[string]int{}
	for ran < kills {
		point, after, wait := "", 0, time.Duration(0)
		if ran%2 == 1 {
			point = namedPoints[(ran/2)%len(namedPoints)]
			after = 1 + rng.IntN(20)
			if point == crashRecovery {
				after = 1
			}
		} else {
			wait = time.Duration(20+rng.IntN(300)) * time.Millisecond
		}
		acks, how := runChild(t, db, strconv.Itoa(ran), point, after, wait)
		if how != "killed" {
			t.Fatalf("kill %d (point %q after %d): child %s; output %q", ran, point, after, how, acks.other)
		}
		for _, o := range acks.other {
			if strings.HasPrefix(o, "ERR") || strings.HasPrefix(o, "OPENFAIL") {
				t.Fatalf("kill %d: child: %s", ran, o)
			}
		}
		if point != "" {
			byPoint[point]++
		} else {
			byPoint["random"]++
		}
		for k, v := range acks.intents {
			all.intents[k] = v
		}
		for k := range acks.resolved {
			all.resolved[k] = true
		}
		for k := range acks.acked {
			all.acked[k] = true
		}
		for k, v := range acks.obs {
			all.obs[k] = v
		}
		all.markers = append(all.markers, acks.markers...)
		ran++
		verifyAfterCrash(t, db, all)
		if t.Failed() {
			t.Fatalf("after kill %d (point %q after %d)", ran, point, after)
		}
	}
	t.Logf("ran %d SIGKILLs (%v); %d acknowledged intents, %d observations, %d markers all present after recovery",
		ran, byPoint, len(all.intents), len(all.obs), len(all.markers))
	fmt.Printf("ledger crash test: %d kills\n", ran)
}

// verifyAfterCrash reopens the database (which runs recovery) and checks
// every invariant.
func verifyAfterCrash(t *testing.T, path string, acks childAcks) {
	t.Helper()
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer mustClose(t, s)
	ctx := context.Background()
	q := func(query string, args ...any) int64 {
		t.Helper()
		var n int64
		if err := s.db.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	}
	var integrity string
	if err := s.db.QueryRow("PRAGMA integrity_check").Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("integrity_check: %q, %v", integrity, err)
	}
	if n := q(`SELECT count(*) FROM pragma_foreign_key_check`); n != 0 {
		t.Errorf("%d foreign key violations", n)
	}
	if n := q(`SELECT count(*) FROM intents`); n != 0 {
		t.Errorf("%d intents survived recovery", n)
	}
	if n := q(`SELECT count(*) FROM dependencies WHERE kind = 'pin'`); n != 0 {
		t.Errorf("%d pins survived recovery", n)
	}
	// No partial operation: each observation has its payload, its full
	// ancestry and its snapshot bump; no payload is orphaned.
	if n := q(`SELECT count(*) FROM observations WHERE payload_id IS NULL`); n != 0 {
		t.Errorf("%d observations without payload", n)
	}
	if n := q(`SELECT count(*) FROM payloads WHERE payload_id NOT IN (SELECT payload_id FROM observations WHERE payload_id IS NOT NULL)`); n != 0 {
		t.Errorf("%d orphaned payloads", n)
	}
	// Ancestry is one row to the parent when the plan extends the
	// parent's own plan (storeAncestry), otherwise one row per step.
	if n := q(`SELECT count(*) FROM observations o WHERE (SELECT count(*) FROM dependencies d WHERE d.kind = 'ancestry' AND d.observation_id = o.observation_id) NOT IN (o.plan_count, min(o.plan_count, 1))`); n != 0 {
		t.Errorf("%d observations with partial ancestry", n)
	}
	if n := q(`SELECT count(*) FROM scopes sc WHERE sc.latest_snapshot != (SELECT coalesce(max(snapshot), 0) FROM observations o WHERE o.scope_id = sc.scope_id)`); n != 0 {
		t.Errorf("%d scopes whose snapshot disagrees with their observations", n)
	}
	// Every acknowledged operation is present.
	for id, o := range acks.obs {
		if n := q(`SELECT count(*) FROM observations WHERE observation_id = ? AND scope_id = ? AND end_digest = ? AND payload_id = ?`, id, o[0], o[1], o[2]); n != 1 {
			t.Errorf("acknowledged observation %d missing", id)
		}
	}
	for _, m := range acks.markers {
		if n := q(`SELECT count(*) FROM markers WHERE scope_id = ? AND digest = ?`, m[0], m[1]); n != 1 {
			t.Errorf("acknowledged marker %.12s missing", m[1])
		}
	}
	// An acknowledged resolve (sync or queued) was committed: recovery
	// found no intent to poison.
	for id := range acks.acked {
		if n := q(`SELECT count(*) FROM markers WHERE intent_id = ? AND kind = 'start_poison'`, id); n != 0 {
			t.Errorf("intent %d was poisoned by recovery after its resolve was acknowledged", id)
		}
	}
	// Every acknowledged intent whose resolution was never sent was
	// poisoned at its start.
	for id, in := range acks.intents {
		if acks.resolved[id] {
			continue
		}
		if n := q(`SELECT count(*) FROM markers WHERE scope_id = ? AND digest = ? AND kind = 'start_poison'`, in[0], in[1]); n != 1 {
			t.Errorf("unresolved intent %d was not poisoned at its start", id)
		}
	}
}
