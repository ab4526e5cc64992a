package ledger

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func TestBackupRestoreRoundTripQuarantines(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	live := filepath.Join(dir, "live", "cache.sqlite")
	s := openTest(t, live, Options{})
	sc := testScope(1)
	a := storeTurn(t, s, sc, 1, dig("s0"), dig("e0"), nil)
	storeTurn(t, s, sc, 1, dig("e0"), dig("e1"), []PlanBlock{a})
	if _, err := s.WriteMarkers(ctx, sc, []Marker{{Kind: MarkerStartPoison, Digest: dig("p"), Reason: "test"}}); err != nil {
		t.Fatal(err)
	}
	secret := s.Secret()

	// a live relay is refused, clearly
	backup := filepath.Join(dir, "backups", "b.sqlite")
	if _, err := Backup(live, backup); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "stop that Caddy first") {
		t.Fatalf("backup of a live ledger: %v", err)
	}
	if ok, _ := fileExists(backup); ok {
		t.Fatal("a refused backup created its output")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	res, err := Backup(live, backup)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pages <= 0 || res.Bytes <= 0 || res.FormatVersion != int64(formatVersion()) {
		t.Fatalf("backup result %+v", res)
	}
	if ok, _ := fileExists(backup + blockedSuffix); ok {
		t.Fatal("a finished backup is still blocked")
	}
	if runtime.GOOS != "windows" {
		if st, _ := os.Stat(backup); st.Mode().Perm() != 0o600 {
			t.Fatalf("backup mode %s", st.Mode().Perm())
		}
	}
	// never overwrite
	if _, err := Backup(live, backup); !errors.Is(err, ErrDestinationExists) {
		t.Fatalf("second backup to the same path: %v", err)
	}
	if _, err := Restore(backup, live); !errors.Is(err, ErrDestinationExists) {
		t.Fatalf("restore over the live database: %v", err)
	}

	restored := filepath.Join(dir, "restored", "cache.sqlite")
	if _, err := Restore(backup, restored); err != nil {
		t.Fatal(err)
	}
	r := openTest(t, restored, Options{})
	if !bytes.Equal(r.Secret(), secret) {
		t.Fatal("the restored ledger has another secret")
	}
	// the coverage gap was consumed: the earlier generation is quarantined
	gen, err := r.ScopeGeneration(ctx, sc.ID)
	if err != nil || gen != 2 {
		t.Fatalf("restored generation %d (%v), want 2", gen, err)
	}
	if _, err := r.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("e1"), Plan: []PlanBlock{a}}); !IsReason(err, ReasonStaleGeneration) {
		t.Fatalf("replaying a pre-restore record: %v, want stale_generation", err)
	}
	// markers survive
	if m, err := r.Markers(ctx, sc.ID, dig("p")); err != nil || len(m) != 1 {
		t.Fatalf("markers after restore: %v %v", m, err)
	}
	// new turns are recorded in the new generation and replay
	b := storeTurn(t, r, sc, 2, dig("s9"), dig("e9"), nil)
	if _, err := r.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: 2, StartDigest: dig("e9"), Plan: []PlanBlock{b}}); err != nil {
		t.Fatalf("replay after restore: %v", err)
	}
}

func TestBackupCrashChild(t *testing.T) {
	if os.Getenv("LEDGER_BACKUP_CHILD") != "1" {
		t.Skip("runs only as TestKilledBackupStaysBlocked's child process")
	}
	crashHook = func(p string) {
		if p == crashBackupCopied {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	_, err := Backup(os.Getenv("LEDGER_BACKUP_SRC"), os.Getenv("LEDGER_BACKUP_DST"))
	t.Fatalf("the backup was not killed: %v", err)
}

func TestKilledBackupStaysBlocked(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "cache.sqlite")
	s := openTest(t, src, Options{})
	storeTurn(t, s, testScope(1), 1, dig("s"), dig("e"), nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "copy.sqlite")
	cmd := exec.Command(os.Args[0], "-test.run=^TestBackupCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LEDGER_BACKUP_CHILD=1", "LEDGER_BACKUP_SRC="+src, "LEDGER_BACKUP_DST="+dst)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v\n%s", err, out)
	}
	// the copy is complete on disk, but it stays blocked
	if ok, _ := fileExists(dst + blockedSuffix); !ok {
		t.Fatal("the killed backup left no .blocked file")
	}
	if _, err := Open(dst, Options{}); !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("opening a blocked copy: %v", err)
	}
	if _, err := Restore(dst, filepath.Join(dir, "again.sqlite")); !errors.Is(err, ErrBlocked) {
		t.Fatalf("restoring from a blocked copy: %v", err)
	}
	// the source is untouched and free again
	openTest(t, src, Options{})
}

func TestFailedRestoreLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	notLedger := filepath.Join(dir, "notes.sqlite")
	if err := os.WriteFile(notLedger, []byte("not a database at all, just text that is long enough"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "new.sqlite")
	if _, err := Restore(notLedger, dst); err == nil {
		t.Fatal("restored a file that is no ledger")
	}
	for _, p := range []string{dst, dst + blockedSuffix} {
		if ok, _ := fileExists(p); ok {
			t.Fatalf("a failed restore left %s", p)
		}
	}
}
