package reasoningcache

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// Defaults of Config.
const (
	DefaultMemoryBudget   = 128 << 20
	DefaultMaxConcurrent  = 10
	DefaultEntryAllowance = 4 << 20
	DefaultReplayCeiling  = 16 << 20
	DefaultMaxPlanBlocks  = 256
	DefaultIntentTimeout  = 15 * time.Minute
)

// SessionBase is the fixed part of every session's charge against the
// memory budget (the rest is measured: see the package documentation).
const SessionBase = 64 << 10

// ModelSnapshotWindow is how long a model snapshot other than a scope's latest
// stays acceptable for replay after it was last observed.
const ModelSnapshotWindow = 24 * time.Hour

// maxHotCache caps the ledger's payload cache share of the budget.
const maxHotCache = 4 << 20

// Config configures an Engine. Zero fields take the defaults.
type Config struct {
	// MemoryBudget is M, the bytes the cache may hold for requests at
	// once (default 128 MiB).
	MemoryBudget int64
	// MaxConcurrent bounds the full-cache sessions at once (default 10).
	MaxConcurrent int
	// EntryAllowance bounds one recorded output (default 4 MiB). It may
	// not exceed the ledger's payload limit (16 MiB): an admitted output
	// must always fit a ledger payload.
	EntryAllowance int64
	// ReplayCeiling bounds the replayed output bytes of one request
	// (default 16 MiB).
	ReplayCeiling int64
	// MaxPlanBlocks bounds the blocks of one plan (default 256).
	MaxPlanBlocks int
	// IntentTimeout is the inactivity after which Sweep poisons and
	// removes an unresolved intent (default 15m).
	IntentTimeout time.Duration
	// Limits are the canonical identity limits (zero: the defaults).
	Limits canonical.Limits
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives Debug lines with fixed reason codes (default: none).
	Logger *zap.Logger
	// Counters receive the engine's runtime counters; engines that share
	// one keep counting across reloads (default: the engine's own).
	Counters *Counters
}

// HotCacheBytes is the ledger payload cache size for a memory budget:
// min(4 MiB, M/32). The app opens the ledger with it
// (ledger.Options.HotCacheBytes) so the cache stays inside the shared
// preparation allowance.
func HotCacheBytes(memoryBudget int64) int64 {
	if memoryBudget <= 0 {
		memoryBudget = DefaultMemoryBudget
	}
	return min(maxHotCache, memoryBudget/32)
}

// Check reports whether New would accept the configuration: the range
// checks and the memory budget, without a store. Caddy's provisioning
// (which `caddy validate` runs) checks with it before anything is opened.
func (c Config) Check() error {
	_, err := c.withDefaults()
	return err
}

// withDefaults fills zero fields and checks the budget: M must hold the
// shared preparation allowance plus one SessionBase.
func (c Config) withDefaults() (Config, error) {
	if c.MemoryBudget == 0 {
		c.MemoryBudget = DefaultMemoryBudget
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = DefaultMaxConcurrent
	}
	if c.EntryAllowance == 0 {
		c.EntryAllowance = DefaultEntryAllowance
	}
	if c.ReplayCeiling == 0 {
		c.ReplayCeiling = DefaultReplayCeiling
	}
	if c.MaxPlanBlocks == 0 {
		c.MaxPlanBlocks = DefaultMaxPlanBlocks
	}
	if c.IntentTimeout == 0 {
		c.IntentTimeout = DefaultIntentTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Counters == nil {
		c.Counters = new(Counters)
	}
	lim, err := c.Limits.Effective()
	if err != nil {
		return c, fmt.Errorf("reasoningcache: %w", err)
	}
	c.Limits = lim
	switch {
	case c.MemoryBudget < 0:
		return c, fmt.Errorf("reasoningcache: memory_budget %d is negative", c.MemoryBudget)
	case c.MaxConcurrent < 0:
		return c, fmt.Errorf("reasoningcache: max_concurrent %d is negative", c.MaxConcurrent)
	case c.EntryAllowance < 0:
		return c, fmt.Errorf("reasoningcache: entry_allowance %d is negative", c.EntryAllowance)
	case c.EntryAllowance > ledger.DefaultMaxPayloadBytes:
		return c, fmt.Errorf("reasoningcache: entry_allowance %d is above the ledger's payload limit of %d bytes",
			c.EntryAllowance, int64(ledger.DefaultMaxPayloadBytes))
	case c.ReplayCeiling < 0:
		return c, fmt.Errorf("reasoningcache: replay_ceiling %d is negative", c.ReplayCeiling)
	case c.MaxPlanBlocks < 0:
		return c, fmt.Errorf("reasoningcache: max_plan_blocks %d is negative", c.MaxPlanBlocks)
	case c.IntentTimeout < 0:
		return c, fmt.Errorf("reasoningcache: intent_timeout %s is negative", c.IntentTimeout)
	}
	if need := c.SharedAllowance() + SessionBase; c.MemoryBudget < need {
		return c, fmt.Errorf("reasoningcache: memory_budget %d bytes cannot hold the shared preparation allowance plus one session base (%d bytes)",
			c.MemoryBudget, need)
	}
	return c, nil
}

// SharedAllowance is the part of the budget reserved for preparation: the
// hot cache, the canonical scratch (Limits.MaxScratch) and the replay
// ceiling. Sessions share the rest. Call it on a Config with its limits
// and defaults applied (Engine.Config returns one).
func (c Config) SharedAllowance() int64 {
	scratch := c.Limits.MaxScratch
	if scratch == 0 {
		scratch = canonical.DefaultMaxScratch
	}
	ceiling := c.ReplayCeiling
	if ceiling == 0 {
		ceiling = DefaultReplayCeiling
	}
	return HotCacheBytes(c.MemoryBudget) + scratch + ceiling
}
