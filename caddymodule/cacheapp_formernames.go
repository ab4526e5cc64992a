package caddymodule

import (
	"fmt"
	"time"
)

// resolveFormerNames moves options set under a former name to their
// current field: max_plan_records is max_plan_blocks and
// generation_timeout is intent_timeout. The word "generation" now means
// only a scope's generation, and a plan's entries are blocks. A config
// that sets both names to different values is refused rather than
// guessed at.
func (a *CacheApp) resolveFormerNames() error {
	if a.MaxPlanRecords != 0 {
		if a.MaxPlanBlocks != 0 && a.MaxPlanBlocks != a.MaxPlanRecords {
			return fmt.Errorf("max_plan_records (%d) is the former name of max_plan_blocks (%d): set only max_plan_blocks",
				a.MaxPlanRecords, a.MaxPlanBlocks)
		}
		a.MaxPlanBlocks, a.MaxPlanRecords = a.MaxPlanRecords, 0
	}
	if a.GenerationTimeout != 0 {
		if a.IntentTimeout != 0 && a.IntentTimeout != a.GenerationTimeout {
			return fmt.Errorf("generation_timeout (%s) is the former name of intent_timeout (%s): set only intent_timeout",
				time.Duration(a.GenerationTimeout), time.Duration(a.IntentTimeout))
		}
		a.IntentTimeout, a.GenerationTimeout = a.GenerationTimeout, 0
	}
	return nil
}
