package caddymodule

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// TestCacheAppHealthy: healthy while the configuration runs with its
// ledger open or with the cache disabled by configuration; unhealthy once
// the configuration is being stopped (reload or exit), when the ledger is
// closed, and when the cache is enabled without an open ledger.
func TestCacheAppHealthy(t *testing.T) {
	dir := t.TempDir()
	defer stopCaddy(t)

	disabled := loadConfig(t, cacheConfig(t, filepath.Join(dir, "none", "c.sqlite"), false, "ERROR"))
	if err := disabled.Healthy(); err != nil {
		t.Fatalf("cache disabled by configuration: %v, want healthy", err)
	}

	app1 := loadConfig(t, cacheConfig(t, filepath.Join(dir, "c.sqlite"), true, "ERROR"))
	if err := app1.Healthy(); err != nil {
		t.Fatalf("running with an open ledger: %v", err)
	}
	if err := disabled.Healthy(); !errors.Is(err, errDraining) {
		t.Fatalf("a configuration replaced by a reload: %v, want errDraining", err)
	}

	app2 := loadConfig(t, cacheConfig(t, filepath.Join(dir, "c.sqlite"), true, "WARN"))
	if err := app1.Healthy(); !errors.Is(err, errDraining) {
		t.Fatalf("old configuration after reload: %v, want errDraining", err)
	}
	if err := app2.Healthy(); err != nil {
		t.Fatalf("new configuration sharing the ledger: %v", err)
	}
	if err := app2.holder.close(); err != nil {
		t.Fatal(err)
	}
	if err := app2.Healthy(); !errors.Is(err, errLedgerClosed) {
		t.Fatalf("closed ledger: %v, want errLedgerClosed", err)
	}

	stopCaddy(t)
	if err := app2.Healthy(); !errors.Is(err, errDraining) {
		t.Fatalf("stopped configuration: %v, want errDraining", err)
	}

	notOpen := &CacheApp{Enabled: true, stopping: new(atomic.Bool)}
	if err := notOpen.Healthy(); !errors.Is(err, errLedgerNotOpen) {
		t.Fatalf("enabled without a ledger: %v, want errLedgerNotOpen", err)
	}
}
