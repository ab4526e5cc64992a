package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSnapshotIsConsistentPrivateAndWithoutSecret(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{})
	sc := testScope(1)
	// enough pages for many 32-page steps
	big := []byte(`[{"type":"message","text":"` + strings.Repeat("x", 64<<10) + `"}]`)
	for i := range 40 {
		id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("s%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		payload := append(bytes.Clone(big[:len(big)-3]), fmt.Sprintf("%d\"}]", i)...)
		if _, err := s.CommitObservation(ctx, CommitObservationRequest{IntentID: id, EndDigest: dig("e%d", i),
			EnvelopeFP: dig("env%d", i), PayloadFP: dig("p%d", i), OutputHash: dig("o%d", i),
			Replayable: true, Payload: payload, MoveToDelivery: true}); err != nil {
			t.Fatal(err)
		}
		if err := s.ResolveIntent(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	var before int
	if err := s.db.QueryRow(`SELECT count(*) FROM observations`).Scan(&before); err != nil {
		t.Fatal(err)
	}

	// while the copy runs: a second snapshot is refused, and commits go on
	// (each step hook commits one more turn; the copy must not see them)
	dir := filepath.Join(t.TempDir(), "inspection")
	var steps, refused int
	var mu sync.Mutex
	onStep := func(_, _ int64) {
		mu.Lock()
		defer mu.Unlock()
		steps++
		if steps == 1 {
			if _, err := s.Snapshot(ctx, SnapshotOptions{Dir: dir}); errors.Is(err, ErrSnapshotRunning) {
				refused++
			}
		}
		if steps <= 5 {
			storeTurn(t, s, testScope(2), 1, dig("x%d", steps), dig("y%d", steps), nil)
		}
	}
	res, err := s.Snapshot(ctx, SnapshotOptions{Dir: dir, OnStep: onStep})
	if err != nil {
		t.Fatal(err)
	}
	if refused != 1 || res.Steps < 5 {
		t.Fatalf("refused %d concurrent snapshots in %d steps", refused, res.Steps)
	}
	st, err := os.Stat(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if st.Mode().Perm() != 0o400 {
			t.Fatalf("snapshot mode %s, want 0400", st.Mode().Perm())
		}
		if dst, _ := os.Stat(dir); dst.Mode().Perm() != 0o700 {
			t.Fatalf("snapshot dir mode %s", dst.Mode().Perm())
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("snapshot dir holds %d entries, want only the snapshot", len(entries))
	}
	raw, err := os.ReadFile(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, s.Secret()) {
		t.Fatal("the snapshot contains the cache secret")
	}

	db, err := sql.Open("sqlite", "file:"+res.Path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	var n int
	var secret []byte
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check %q %v", check, err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM observations`).Scan(&n); err != nil || n != before {
		t.Fatalf("snapshot has %d observations, want the %d of when it began (%v)", n, before, err)
	}
	if err := db.QueryRow(`SELECT secret FROM meta`).Scan(&secret); err != nil || !bytes.Equal(secret, make([]byte, 32)) {
		t.Fatalf("snapshot secret %x %v", secret, err)
	}

	// the next snapshot is a new file; the earlier one stays
	res2, err := s.Snapshot(ctx, SnapshotOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Path == res.Path {
		t.Fatal("second snapshot reused the first one's name")
	}
	if _, err := os.Stat(res.Path); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotRefusesOverCeilingAndLooseDirectory(t *testing.T) {
	s := openTest(t, "", Options{})
	dir := t.TempDir()
	if _, err := s.Snapshot(context.Background(), SnapshotOptions{Dir: filepath.Join(dir, "private"), MaxSourceBytes: 1024}); !errors.Is(err, ErrSnapshotTooLarge) {
		t.Fatalf("over the ceiling: %v", err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	loose := filepath.Join(dir, "loose")
	if err := os.Mkdir(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(context.Background(), SnapshotOptions{Dir: loose}); err == nil || !strings.Contains(err.Error(), "other users") {
		t.Fatalf("loose directory: %v", err)
	}
	for _, d := range []string{filepath.Join(dir, "private"), loose} {
		if entries, _ := os.ReadDir(d); len(entries) != 0 {
			t.Fatalf("a refused snapshot left files in %s: %v", d, entries)
		}
	}
}

func TestCloseWaitsForRunningSnapshot(t *testing.T) {
	// a short busy timeout, so that Close's checkpoint would not wait for
	// the copy's read transaction by itself
	s := openTest(t, "", Options{BusyTimeout: 10 * time.Millisecond})
	for i := range 3 {
		storeTurn(t, s, testScope(i), 1, dig("s"), dig("e"), nil)
	}
	inCopy := make(chan struct{})
	proceed := make(chan struct{})
	var once sync.Once
	onStep := func(_, _ int64) {
		once.Do(func() { close(inCopy); <-proceed })
	}
	// enough pages that the copy takes several steps
	if _, err := s.db.Exec(`WITH RECURSIVE n(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM n WHERE v < 2000)
		INSERT INTO markers (scope_id, kind, digest, reason, created_at) SELECT ?, 'start_poison', printf('%064d', v), ?, 0 FROM n`,
		testScope(0).ID, strings.Repeat("r", 200)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Snapshot(context.Background(), SnapshotOptions{Dir: filepath.Join(t.TempDir(), "snap"), OnStep: onStep})
		done <- err
	}()
	select {
	case <-inCopy:
	case err := <-done:
		t.Fatalf("the snapshot took one step (%v)", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	for !s.isClosed() {
		runtime.Gosched()
	}
	// Close has begun; give it every chance to (wrongly) finish
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a snapshot was copying", err)
	case err := <-done:
		t.Fatalf("snapshot ended (%v) before it was let go", err)
	default:
	}
	close(proceed)
	if err := <-done; err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}
