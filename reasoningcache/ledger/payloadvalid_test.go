package ledger

import (
	"context"
	"testing"
)

// TestPayloadDamagedJSON: a stored payload that is no longer valid JSON
// (damaged on disk) is refused when it is loaded, and is not cached, so
// the planner can trust every Output it gets.
func TestPayloadDamagedJSON(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir()+"/c.sqlite", Options{})
	a := storeTurn(t, s, testScope(1), 1, dig("s0"), dig("e0"), nil)
	// the same size, so only the JSON check can notice
	if _, err := s.wconn.ExecContext(ctx, `UPDATE payloads SET output = '[{"type":"reasoning","id":"rs_1"}}', row_version = row_version + 1 WHERE payload_id = ?`, a.PayloadID); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Payload(ctx, a.PayloadID); err == nil {
		t.Fatalf("damaged payload served: %s", p.Output)
	}
	if s.cache.len() != 0 {
		t.Fatal("damaged payload cached")
	}
}
