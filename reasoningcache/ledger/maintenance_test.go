package ledger

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckpointAndTruncateOnClose(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.sqlite")
	s := openTest(t, path, Options{manualMaintenance: true})
	for i := 0; i < 20; i++ {
		storeTurn(t, s, testScope(1), 1, dig("s%d", i), dig("e%d", i), nil)
	}
	// The automatic checkpoint is off: the WAL keeps every frame until
	// someone checkpoints.
	frames, done, err := s.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if frames < 20 || done != frames {
		t.Fatalf("checkpoint: %d frames in the WAL, %d checkpointed", frames, done)
	}
	storeTurn(t, s, testScope(1), 1, dig("s-after"), dig("e-after"), nil)
	mustClose(t, s)
	if st, err := os.Stat(path + "-wal"); err == nil && st.Size() != 0 {
		t.Fatalf("WAL is %d bytes after Close, want truncated", st.Size())
	}
	if _, _, err := s.Checkpoint(ctx); err != ErrClosed {
		t.Fatalf("Checkpoint after Close: %v", err)
	}
}

func TestMigrationsVersioned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.sqlite")
	s := openTest(t, path, Options{})
	var user, format int
	if err := s.db.QueryRow(`SELECT (SELECT user_version FROM pragma_user_version), format_version FROM meta`).Scan(&user, &format); err != nil {
		t.Fatal(err)
	}
	if user != formatVersion() || format != formatVersion() {
		t.Fatalf("user_version=%d format_version=%d, want %d", user, format, formatVersion())
	}
	secret := s.Secret()
	mustClose(t, s)
	// Reopening migrates nothing and keeps the secret.
	s = openTest(t, path, Options{})
	if string(s.Secret()) != string(secret) || len(secret) != 32 {
		t.Fatal("secret changed across reopen")
	}
	var tables int
	if err := s.db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN
		('meta','scopes','observations','payloads','markers','dependencies','intents')`).Scan(&tables); err != nil || tables != 7 {
		t.Fatalf("tables: %d, %v", tables, err)
	}
}

func TestHotCacheBounds(t *testing.T) {
	c := newHotCache(100, 3)
	for i := int64(1); i <= 5; i++ {
		c.put(i, 1, []byte("0123456789"))
	}
	if c.len() != 3 {
		t.Fatalf("entries = %d, want 3", c.len())
	}
	if _, ok := c.get(1, 1); ok {
		t.Fatal("oldest entry not evicted")
	}
	if _, ok := c.get(5, 2); ok {
		t.Fatal("served a stale row version")
	}
	if _, ok := c.get(5, 1); ok {
		t.Fatal("stale entry not dropped")
	}
	c.put(9, 1, make([]byte, 26)) // over a quarter of the budget: not cached
	if _, ok := c.get(9, 1); ok {
		t.Fatal("oversized value cached")
	}
	for i := int64(10); i < 20; i++ {
		c.put(i, 1, make([]byte, 20))
	}
	if c.bytes > 100 {
		t.Fatalf("cache holds %d bytes, budget 100", c.bytes)
	}
	off := newHotCache(-1, 3)
	off.put(1, 1, []byte("x"))
	if _, ok := off.get(1, 1); ok {
		t.Fatal("disabled cache served a value")
	}
}
