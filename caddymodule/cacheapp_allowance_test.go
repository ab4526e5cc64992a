package caddymodule

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// TestEntryAllowanceAboveLedgerLimitFailsAtProvisioning: an entry
// allowance the ledger could never store (its payload limit is 16 MiB) is
// refused when Caddy loads the configuration.
func TestEntryAllowanceAboveLedgerLimitFailsAtProvisioning(t *testing.T) {
	raw, _ := json.Marshal(map[string]any{
		"database": filepath.Join(t.TempDir(), "ledger.sqlite"), "enabled": true,
		"memory_budget": 1 << 30, "entry_allowance": 32 << 20,
	})
	_, err := caddy.ProvisionContext(&caddy.Config{
		Admin:   &caddy.AdminConfig{Disabled: true},
		AppsRaw: caddy.ModuleMap{"reasoning_cache": raw},
	})
	if err == nil || !strings.Contains(err.Error(), "entry_allowance") {
		t.Fatalf("provisioning: %v", err)
	}
}
