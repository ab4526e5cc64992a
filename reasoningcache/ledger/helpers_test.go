package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"
)

// dig returns a deterministic digest for a label.
func dig(format string, args ...any) string {
	h := sha256.Sum256([]byte(fmt.Sprintf(format, args...)))
	return hex.EncodeToString(h[:])
}

func testScope(n int) Scope {
	return Scope{ID: dig("scope %d", n), Model: "gpt-test", Caller: dig("caller")}
}

func openTest(t testing.TB, path string, opts Options) *Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "data", "cache.sqlite")
	}
	s, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// storeTurn runs one full turn (intent, observation with payload,
// resolve) and returns the observation's plan step.
func storeTurn(t testing.TB, s *Store, sc Scope, gen int64, start, end string, plan []PlanBlock) PlanBlock {
	t.Helper()
	ctx := context.Background()
	id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: gen, StartDigest: start, Plan: plan})
	if err != nil {
		t.Fatalf("CreateIntent: %v", err)
	}
	res, err := s.CommitObservation(ctx, CommitObservationRequest{
		IntentID: id, EndDigest: end, EnvelopeFP: dig("env %s", end), PayloadFP: dig("payload %s", end),
		OutputHash: dig("out %s", end), Replayable: true, Payload: []byte(`[{"type":"reasoning","id":"rs_1"}]`),
		MoveToDelivery: true,
	})
	if err != nil {
		t.Fatalf("CommitObservation: %v", err)
	}
	if res.Outcome != OutcomeStored {
		t.Fatalf("outcome %s, want stored", res.Outcome)
	}
	if err := s.ResolveIntent(ctx, id); err != nil {
		t.Fatalf("ResolveIntent: %v", err)
	}
	return PlanBlock{ObservationID: res.ObservationID, PayloadID: res.PayloadID, EndDigest: end}
}
