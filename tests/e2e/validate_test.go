package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

// snapshotDir returns the names and contents of the files in dir.
func snapshotDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// sameSnapshot fails unless a and b hold the same files with the same bytes.
func sameSnapshot(t *testing.T, what string, a, b map[string][]byte) {
	t.Helper()
	if len(a) != len(b) {
		t.Errorf("%s: %d files before, %d after", what, len(a), len(b))
	}
	for name, before := range a {
		if after, ok := b[name]; !ok || !bytes.Equal(before, after) {
			t.Errorf("%s: %s changed", what, name)
		}
	}
}

// TestValidateHasNoSideEffects: `caddy validate` only checks the
// configuration. Against a running relay it succeeds (the ledger is owned
// by the relay); on an idle ledger, with the cache enabled or disabled, it
// leaves every file byte-identical, so cached turns keep replaying; for a
// fresh configuration it creates nothing.
func TestValidateHasNoSideEffects(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{APIKey: upstreamKey})
	up := httptest.NewServer(fake)
	defer up.Close()
	dir := t.TempDir()
	global := func(enabled bool, db string) string {
		return fmt.Sprintf("\treasoning_cache {\n\t\tdatabase %s\n\t\tenabled %v\n\t}", filepath.Join(dir, db), enabled)
	}
	env := []string{"RT_UPSTREAM_KEY=" + upstreamKey, "RT_TOKEN=" + relayToken}
	site := strings.ReplaceAll(fmt.Sprintf(siteConfig, ""), "{UPSTREAM}", up.URL)
	opts := relaytest.Options{Global: global(true, "data/ledger.sqlite"), Site: site, Env: env, Dir: dir}
	c := relaytest.Start(t, opts)
	r := &relay{caddy: c, fake: fake}
	cv := newConvo(t, r, relayToken, "validate", nil)
	cv.say("one", false)
	cv.say("two", true)

	// the usual validate-then-reload routine, against the running relay
	for _, enabled := range []bool{true, false} {
		o := opts
		o.Global = global(enabled, "data/ledger.sqlite")
		if out, err := c.Validate(o); err != nil {
			t.Fatalf("validate (enabled %v) against the running relay: %v\n%s", enabled, err, out)
		}
	}
	c.Stop()

	// an idle ledger: validating with the cache disabled must not record
	// a coverage gap, validating with it enabled must not advance the
	// scopes' generations
	ledgerDir := filepath.Join(dir, "data")
	before := snapshotDir(t, ledgerDir)
	for _, enabled := range []bool{false, true} {
		o := opts
		o.Global = global(enabled, "data/ledger.sqlite")
		if out, err := c.Validate(o); err != nil {
			t.Fatalf("validate (enabled %v) on the idle ledger: %v\n%s", enabled, err, out)
		}
		sameSnapshot(t, fmt.Sprintf("validate (enabled %v) on the idle ledger", enabled), before, snapshotDir(t, ledgerDir))
	}

	// a fresh configuration: nothing is created
	o := opts
	o.Global = global(true, "fresh/ledger.sqlite")
	if out, err := c.Validate(o); err != nil {
		t.Fatalf("validate of a fresh configuration: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "fresh")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("validate of a fresh configuration created its ledger folder: %v", err)
	}

	// and the cached turns still replay after a restart
	opts.Port = c.Port
	r.caddy = relaytest.Start(t, opts)
	cv.c = r.client(relayToken)
	cv.say("three after validating", false)
	if last := cv.r.upstreamRequest(t, lastMarker(cv.msgs)); len(last.Replayed) != len(cv.turns)-1 {
		t.Fatalf("after validate: %d of %d earlier turns replayed", len(last.Replayed), len(cv.turns)-1)
	}
}
