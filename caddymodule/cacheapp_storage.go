package caddymodule

import (
	"fmt"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// ledgerOptions turns the app's storage fields into the ledger's options.
// Defaults and minimums are the ledger's (ledger.Open rejects a retention
// under 30 days or a reserve under 64 KiB).
func (a *CacheApp) ledgerOptions(hotCacheBytes int64) ledger.Options {
	return ledger.Options{
		Disabled:      !a.Enabled,
		HotCacheBytes: hotCacheBytes,
		Retention:     time.Duration(a.Retention),
		DiskAdmission: a.DiskAdmission,
		ReserveBytes:  a.Reserve,
	}
}

// validateStorage rejects storage options below their minimums, so that
// `caddy validate` reports them.
func (a *CacheApp) validateStorage() error {
	switch {
	case a.Retention < 0 || (a.Retention != 0 && time.Duration(a.Retention) < ledger.MinRetention):
		return fmt.Errorf("retention %s is below the minimum of %s (30 days)",
			time.Duration(a.Retention), ledger.MinRetention)
	case a.Reserve < 0 || (a.Reserve != 0 && a.Reserve < ledger.MinReserveBytes):
		return fmt.Errorf("reserve of %d bytes is below the minimum of %d (64 KiB)", a.Reserve, ledger.MinReserveBytes)
	case a.DiskAdmission < 0:
		return fmt.Errorf("disk_admission %d is negative", a.DiskAdmission)
	}
	return nil
}
