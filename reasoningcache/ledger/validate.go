package ledger

import (
	"encoding/json"
	"fmt"
)

// isDigest reports whether d is 64 lowercase hexadecimal characters.
func isDigest(d string) bool {
	if len(d) != 64 {
		return false
	}
	for i := 0; i < len(d); i++ {
		c := d[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func checkDigest(op, field, d string) error {
	if !isDigest(d) {
		return invalid(op, ReasonInvalidArgument, "%s is not a lowercase hex SHA-256 digest", field)
	}
	return nil
}

// encodePlan checks a plan's size limits and returns its JSON.
func (s *Store) encodePlan(op string, plan []PlanBlock) (string, error) {
	if len(plan) > s.opts.MaxPlanBlocks {
		return "", invalid(op, ReasonInvalidArgument, "plan has %d blocks, limit %d", len(plan), s.opts.MaxPlanBlocks)
	}
	if plan == nil {
		plan = []PlanBlock{}
	}
	for i, st := range plan {
		if st.ObservationID <= 0 || st.PayloadID <= 0 || !isDigest(st.EndDigest) {
			return "", invalid(op, ReasonInvalidArgument, "plan block %d is malformed", i)
		}
	}
	b, err := json.Marshal(plan)
	if err != nil {
		return "", fmt.Errorf("encode plan: %w", err)
	}
	if len(b) > s.opts.MaxPlanBytes {
		return "", invalid(op, ReasonInvalidArgument, "plan is %d bytes, limit %d", len(b), s.opts.MaxPlanBytes)
	}
	return string(b), nil
}

// decodePlan checks the stored length and count before loading the JSON.
func (s *Store) decodePlan(raw string, count int64) ([]PlanBlock, error) {
	if count < 0 || count > int64(s.opts.MaxPlanBlocks) || len(raw) > s.opts.MaxPlanBytes {
		return nil, fmt.Errorf("%w: plan of %d blocks, %d bytes", ErrTooLarge, count, len(raw))
	}
	plan := make([]PlanBlock, 0, count)
	if err := json.Unmarshal([]byte(raw), &plan); err != nil {
		return nil, fmt.Errorf("ledger: decode stored plan: %w", err)
	}
	if int64(len(plan)) != count {
		return nil, fmt.Errorf("ledger: stored plan has %d blocks, row says %d", len(plan), count)
	}
	return plan, nil
}
