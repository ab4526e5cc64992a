package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// cacheConfig is a minimal Caddy JSON config with the reasoning_cache app;
// level only exists to make two configs differ (a byte-identical config is
// not reloaded).
func cacheConfig(t *testing.T, db string, enabled bool, level string) []byte {
	t.Helper()
	cfg := map[string]any{
		"admin":   map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
		"logging": map[string]any{"logs": map[string]any{"default": map[string]any{"level": level}}},
		"apps":    map[string]any{"reasoning_cache": map[string]any{"database": db, "enabled": enabled}},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loadConfig(t *testing.T, cfg []byte) *CacheApp {
	t.Helper()
	if err := caddy.Load(cfg, true); err != nil {
		t.Fatalf("caddy.Load: %v", err)
	}
	return activeCacheApp(t)
}

func activeCacheApp(t *testing.T) *CacheApp {
	t.Helper()
	appIface, err := caddy.ActiveContext().App("reasoning_cache")
	if err != nil {
		t.Fatalf("ctx.App: %v", err)
	}
	app, ok := appIface.(*CacheApp)
	if !ok {
		t.Fatalf("app is %T", appIface)
	}
	return app
}

// closeCounter counts store closes per database path.
type closeCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func countCloses(t *testing.T) *closeCounter {
	c := &closeCounter{n: map[string]int{}}
	testHookStoreClosed = func(p string) {
		c.mu.Lock()
		c.n[p]++
		c.mu.Unlock()
	}
	t.Cleanup(func() { testHookStoreClosed = nil })
	return c
}

func (c *closeCounter) get(p string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[p]
}

func (c *closeCounter) waitFor(t *testing.T, p string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.get(p) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s closed %d times, want %d", filepath.Base(p), c.get(p), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func stopCaddy(t *testing.T) {
	t.Helper()
	if err := caddy.Stop(); err != nil {
		t.Errorf("caddy.Stop: %v", err)
	}
}

func writeMarker(t *testing.T, st *ledger.Store, label string) {
	t.Helper()
	d := fmt.Sprintf("%064x", len(label)*1000003+int(label[0]))
	sc := ledger.Scope{ID: strings.Repeat("a", 64), Model: "m"}
	if _, err := st.WriteMarkers(context.Background(), sc, []ledger.Marker{{Kind: ledger.MarkerStartPoison, Digest: d, Reason: "test"}}); err != nil {
		t.Fatalf("write %s: %v", label, err)
	}
}

func TestCacheAppReloadReusesStore(t *testing.T) {
	closes := countCloses(t)
	dir := t.TempDir()
	db1, db2 := filepath.Join(dir, "one.sqlite"), filepath.Join(dir, "two.sqlite")
	defer stopCaddy(t)

	app1 := loadConfig(t, cacheConfig(t, db1, true, "ERROR"))
	st1, rel1, err := app1.acquire()
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}

	// A changed config while a request holds the store: the store is
	// handed over, not reopened, and the old config's cleanup keeps it.
	app2 := loadConfig(t, cacheConfig(t, db1, true, "WARN"))
	if app2 == app1 {
		t.Fatal("config was not reloaded")
	}
	st2, rel2, err := app2.acquire()
	if err != nil {
		t.Fatalf("Acquire after reload: %v", err)
	}
	if st2 != st1 {
		t.Fatal("reload reopened the store instead of reusing it")
	}
	if n, _ := ledgers.References(app2.DatabasePath()); n != 1 {
		t.Fatalf("pool references = %d after the old config's cleanup, want 1", n)
	}
	if closes.get(app1.DatabasePath()) != 0 {
		t.Fatal("the old config's cleanup closed the store")
	}
	writeMarker(t, st1, "old request after reload")
	rel1()
	rel1() // releasing twice is harmless
	if closes.get(app1.DatabasePath()) != 0 {
		t.Fatal("releasing the old request closed the store")
	}

	// A reload to another database while a request holds the first: the
	// first closes only when that request ends, exactly once.
	app3 := loadConfig(t, cacheConfig(t, db2, true, "WARN"))
	if n, _ := ledgers.References(app2.DatabasePath()); n != 0 {
		t.Fatalf("dropped database still has %d pool references", n)
	}
	time.Sleep(50 * time.Millisecond)
	if closes.get(app2.DatabasePath()) != 0 {
		t.Fatal("store closed under an in-flight request")
	}
	writeMarker(t, st2, "in-flight request after path change")
	if _, rel3, err := app3.acquire(); err != nil {
		t.Fatalf("Acquire on the new database: %v", err)
	} else {
		rel3()
	}
	rel2()
	closes.waitFor(t, app2.DatabasePath(), 1)
	if _, err := st2.Candidates(context.Background(), strings.Repeat("a", 64), strings.Repeat("b", 64)); !errors.Is(err, ledger.ErrClosed) {
		t.Fatalf("store not closed: %v", err)
	}

	// Back to the first database: it reopens with what was committed.
	app4 := loadConfig(t, cacheConfig(t, db1, true, "ERROR"))
	st4, rel4, err := app4.acquire()
	if err != nil {
		t.Fatalf("Acquire after reopening: %v", err)
	}
	ms, err := st4.Markers(context.Background(), strings.Repeat("a", 64), fmt.Sprintf("%064x", len("in-flight request after path change")*1000003+int('i')))
	if err != nil || len(ms) != 1 {
		t.Fatalf("marker written by the in-flight request: %v %v", ms, err)
	}
	rel4()
	stopCaddy(t)
	closes.waitFor(t, db1, 2) // once per store opened on it
	closes.waitFor(t, db2, 1)
}

func TestCacheAppDisabledWithoutDatabaseCreatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	app := loadConfig(t, cacheConfig(t, filepath.Join(dir, "c.sqlite"), false, "ERROR"))
	defer stopCaddy(t)
	if _, _, err := app.acquire(); !errors.Is(err, ErrCacheDisabled) {
		t.Fatalf("Acquire: %v, want ErrCacheDisabled", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("disabled cache created %s", dir)
	}
}

func TestCacheAppDisableAndReenable(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "c.sqlite")
	defer stopCaddy(t)
	app := loadConfig(t, cacheConfig(t, db, true, "ERROR"))
	st, rel, err := app.acquire()
	if err != nil {
		t.Fatal(err)
	}
	rel()

	// Disabled by a reload: the store stays owned, records a gap and
	// serves nothing.
	app = loadConfig(t, cacheConfig(t, db, false, "ERROR"))
	if _, _, err := app.acquire(); !errors.Is(err, ErrCacheDisabled) {
		t.Fatalf("Acquire while disabled: %v", err)
	}
	if gap, err := st.CoverageGap(ctx); err != nil || !gap {
		t.Fatalf("coverage gap %v, %v", gap, err)
	}
	if _, err := ledger.Open(db, ledger.Options{}); !errors.Is(err, ledger.ErrInUse) {
		t.Fatalf("disabled app does not keep the database: %v", err)
	}

	// Enabled again: the gap is consumed.
	app = loadConfig(t, cacheConfig(t, db, true, "ERROR"))
	st2, rel2, err := app.acquire()
	if err != nil {
		t.Fatal(err)
	}
	defer rel2()
	if st2 != st {
		t.Fatal("store reopened")
	}
	if gap, err := st.CoverageGap(ctx); err != nil || gap {
		t.Fatalf("coverage gap after enabling %v, %v", gap, err)
	}
}

func TestCacheAppSecondOwnerFailsFast(t *testing.T) {
	db := filepath.Join(t.TempDir(), "c.sqlite")
	other, err := ledger.Open(db, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	err = caddy.Load(cacheConfig(t, db, true, "ERROR"), true)
	if err == nil {
		stopCaddy(t)
		t.Fatal("a second owner was allowed")
	}
	if !strings.Contains(err.Error(), "is in use by another process; use `caddy reload`") {
		t.Fatalf("error does not say what to do: %v", err)
	}
}

func TestParseCacheAppOption(t *testing.T) {
	cases := []struct {
		input string
		want  string // JSON, or "error: <substring>"
	}{
		{"reasoning_cache", `{}`},
		{"reasoning_cache {\n database /var/lib/caddy/rc.sqlite\n enabled true\n}", `{"database":"/var/lib/caddy/rc.sqlite","enabled":true}`},
		{"reasoning_cache {\n enabled on\n}", `{"enabled":true}`},
		{"reasoning_cache {\n enabled 1\n}", `{"enabled":true}`},
		{"reasoning_cache {\n enabled\n}", `{"enabled":true}`},
		{"reasoning_cache {\n enabled off\n}", `{}`},
		{"reasoning_cache {\n enabled 0\n}", `{}`},
		{"reasoning_cache {\n enabled maybe\n}", "error: not a boolean"},
		{"reasoning_cache {\n enabled true false\n}", "error: wrong argument count"},
		{"reasoning_cache {\n database\n}", "error: wrong argument count"},
		{"reasoning_cache {\n database a b\n}", "error: wrong argument count"},
		{"reasoning_cache {\n retention 45d\n disk_admission 2GiB\n reserve 1MiB\n}", `{"retention":3888000000000000,"disk_admission":2147483648,"reserve":1048576}`},
		{"reasoning_cache {\n reserve\n}", "error: wrong argument count"},
		{"reasoning_cache {\n retention soon\n}", "error: bad duration"},
		{"reasoning_cache {\n compaction 1h\n}", `error: unrecognized option "compaction"`},
		{"reasoning_cache extra", "error: wrong argument count"},
	}
	for _, tc := range cases {
		t.Run(tc.input, func(t *testing.T) {
			got, err := parseCacheAppOption(caddyfile.NewTestDispenser(tc.input), nil)
			if want, ok := strings.CutPrefix(tc.want, "error: "); ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("err = %v, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			app := got.(httpcaddyfile.App)
			if app.Name != "reasoning_cache" || string(app.Value) != tc.want {
				t.Fatalf("got %s %s, want %s", app.Name, app.Value, tc.want)
			}
		})
	}
	// A second block overrides only what it sets.
	first, err := parseCacheAppOption(caddyfile.NewTestDispenser("reasoning_cache {\n database x.sqlite\n}"), nil)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := parseCacheAppOption(caddyfile.NewTestDispenser("reasoning_cache {\n enabled yes\n}"), first)
	if err != nil {
		t.Fatal(err)
	}
	if v := string(merged.(httpcaddyfile.App).Value); v != `{"database":"x.sqlite","enabled":true}` {
		t.Fatalf("merged %s", v)
	}
}

func TestCacheAppCaddyfileAdapt(t *testing.T) {
	input := "{\n\treasoning_cache {\n\t\tdatabase /srv/rc.sqlite\n\t\tenabled true\n\t}\n}\n"
	out, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(input), nil)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Apps map[string]json.RawMessage `json:"apps"`
	}
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	if got := string(cfg.Apps["reasoning_cache"]); got != `{"database":"/srv/rc.sqlite","enabled":true}` {
		t.Fatalf("apps.reasoning_cache = %s (config %s)", got, out)
	}
}

func TestCacheAppAutoInstantiatedIsDisabled(t *testing.T) {
	if err := caddy.Load([]byte(`{"admin":{"disabled":true,"config":{"persist":false}}}`), true); err != nil {
		t.Fatal(err)
	}
	defer stopCaddy(t)
	// What a handler gets from ctx.App when no reasoning_cache option is
	// configured: the default, disabled app, which creates nothing.
	app := activeCacheApp(t)
	if app.Enabled || !strings.HasSuffix(app.DatabasePath(), filepath.FromSlash("data/reasoning-cache.sqlite")) {
		t.Fatalf("defaults: enabled=%v database=%s", app.Enabled, app.DatabasePath())
	}
	if _, _, err := app.acquire(); !errors.Is(err, ErrCacheDisabled) {
		t.Fatalf("Acquire: %v", err)
	}
	if _, err := os.Stat(app.DatabasePath()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("default app created %s", app.DatabasePath())
	}
}

// TestCacheAppStorageMinimums: retention and reserve below their minimums
// fail provisioning, before any database is opened.
func TestCacheAppStorageMinimums(t *testing.T) {
	for _, app := range []*CacheApp{
		{Retention: caddy.Duration(29 * 24 * time.Hour)},
		{Reserve: 1024},
		{DiskAdmission: -1},
	} {
		err := app.validateStorage()
		if err == nil {
			t.Errorf("%+v accepted", app)
		} else if strings.Contains(err.Error(), "reasoning_cache") {
			// Caddy prefixes "provision reasoning_cache: "
			t.Errorf("error repeats the module name: %v", err)
		}
	}
	ok := &CacheApp{Retention: caddy.Duration(30 * 24 * time.Hour), Reserve: 64 << 10, DiskAdmission: 1 << 20}
	if err := ok.validateStorage(); err != nil {
		t.Fatal(err)
	}
}

// TestCacheAppGuardedStartRelaysUncached: with a guard file beside the
// database (a full disk latched it in an earlier run), Caddy starts, the
// cache is off and requests are relayed without it, until the guard is
// deleted.
func TestCacheAppGuardedStartRelaysUncached(t *testing.T) {
	db := filepath.Join(t.TempDir(), "data", "c.sqlite")
	st, err := ledger.Open(db, ledger.Options{ReserveBytes: ledger.MinReserveBytes})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db+".guard", []byte("latched"), 0o600); err != nil {
		t.Fatal(err)
	}
	app := loadConfig(t, cacheConfig(t, db, true, "ERROR"))
	if _, _, err := app.acquireEngine(); !errors.Is(err, ErrCacheDisabled) {
		t.Fatalf("acquireEngine with a guard file: %v, want ErrCacheDisabled", err)
	}
	stopCaddy(t)
	if err := os.Remove(db + ".guard"); err != nil {
		t.Fatal(err)
	}
	app = loadConfig(t, cacheConfig(t, db, true, "ERROR"))
	defer stopCaddy(t)
	_, release, err := app.acquireEngine()
	if err != nil {
		t.Fatalf("acquireEngine after the guard was deleted: %v", err)
	}
	release()
}

// dirBytes returns the contents of every file in dir.
func dirBytes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// TestCacheAppValidateOpensNothing: caddy.Validate (what `caddy validate`
// runs: provisioning without starting) neither creates a fresh ledger nor
// touches an existing idle one (no coverage gap when disabled, no
// generation change when enabled), yet still refuses a bad configuration.
func TestCacheAppValidateOpensNothing(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh", "c.sqlite")
	if err := caddy.Validate(mustConfig(t, cacheConfig(t, fresh, true, "ERROR"))); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(fresh)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("validate created %s", filepath.Dir(fresh))
	}

	db := filepath.Join(dir, "idle", "c.sqlite")
	st, err := ledger.Open(db, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeMarker(t, st, "before validate")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	before := dirBytes(t, filepath.Dir(db))
	for _, enabled := range []bool{false, true} {
		if err := caddy.Validate(mustConfig(t, cacheConfig(t, db, enabled, "ERROR"))); err != nil {
			t.Fatalf("validate enabled=%v: %v", enabled, err)
		}
		after := dirBytes(t, filepath.Dir(db))
		if len(after) != len(before) {
			t.Fatalf("validate enabled=%v: files %d -> %d", enabled, len(before), len(after))
		}
		for name, b := range before {
			if after[name] != b {
				t.Fatalf("validate enabled=%v changed %s", enabled, name)
			}
		}
	}

	var bad map[string]any
	_ = json.Unmarshal(cacheConfig(t, db, true, "ERROR"), &bad)
	bad["apps"].(map[string]any)["reasoning_cache"].(map[string]any)["memory_budget"] = 1024
	raw, _ := json.Marshal(bad)
	if err := caddy.Validate(mustConfig(t, raw)); err == nil || !strings.Contains(err.Error(), "memory_budget") {
		t.Fatalf("validate of a too small memory_budget: %v", err)
	}
}

// mustConfig decodes a Caddy JSON config.
func mustConfig(t *testing.T, raw []byte) *caddy.Config {
	t.Helper()
	var cfg caddy.Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	return &cfg
}
