package bundle

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadBundle: reading any file as a bundle never panics; a bundle it
// accepts is in redacted form and survives a canonical round trip.
func FuzzReadBundle(f *testing.F) {
	for _, stream := range []bool{false, true} {
		dir := record(f, f.TempDir(), "rr_fuzz", 1, stream, sseFrames)
		data, _ := exportBytes(f, dir, "rr_fuzz", 1)
		f.Add(data)
	}
	f.Add([]byte(`{"format":"caddy-reasoning-relay/replay-bundle","version":1}`))
	f.Add([]byte(`{"format":"caddy-reasoning-relay/replay-bundle","version":1,"request":{"headers":{"Authorization":["x"]}}}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "b.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := ReadBundle(path)
		if err != nil {
			return
		}
		if err := b.CheckRedacted(); err != nil {
			t.Fatalf("accepted a bundle that is not redacted: %v", err)
		}
		again, err := Canonical(b)
		if err != nil {
			t.Fatalf("an accepted bundle does not encode: %v", err)
		}
		if err := os.WriteFile(path, again, 0o600); err != nil {
			t.Fatal(err)
		}
		b2, err := ReadBundle(path)
		if err != nil {
			t.Fatalf("the canonical form of an accepted bundle is refused: %v", err)
		}
		third, _ := Canonical(b2)
		if !bytes.Equal(third, again) {
			t.Fatal("canonical encoding is not stable")
		}
	})
}
