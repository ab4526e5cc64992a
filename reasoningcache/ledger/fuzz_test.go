package ledger

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// FuzzWriteOps feeds arbitrary identifiers, plans and payloads to the write
// API: every call must return nil or a ValidationError, never panic and
// never leave the database inconsistent.
func FuzzWriteOps(f *testing.F) {
	f.Add(dig("scope"), dig("start"), dig("end"), int64(1), int64(1), []byte(`{"a":1}`), "start_poison")
	f.Add("", "ABC", "x", int64(-1), int64(0), []byte(`{`), "nope")
	f.Add(dig("scope"), dig("start"), dig("start"), int64(1<<62), int64(3), []byte(`null`), "end_conflict")
	s := openTest(f, filepath.Join(f.TempDir(), "fuzz.sqlite"), Options{MaxPayloadBytes: 1 << 10})
	ctx := context.Background()
	ok := func(t *testing.T, what string, err error) {
		var ve *ValidationError
		if err != nil && !errors.As(err, &ve) {
			t.Fatalf("%s: unexpected error kind: %v", what, err)
		}
	}
	f.Fuzz(func(t *testing.T, scope, start, end string, obs, gen int64, payload []byte, kind string) {
		sc := Scope{ID: scope, Model: "m"}
		plan := []PlanBlock{{ObservationID: obs, PayloadID: obs, EndDigest: end}}
		id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: gen, StartDigest: start, Plan: plan})
		ok(t, "CreateIntent with plan", err)
		if err != nil {
			id, err = s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: start})
			ok(t, "CreateIntent", err)
		}
		_, err = s.CommitObservation(ctx, CommitObservationRequest{IntentID: id, EndDigest: end, EnvelopeFP: end,
			PayloadFP: start, OutputHash: end, Replayable: true, Payload: payload, MoveToDelivery: obs%2 == 0})
		ok(t, "CommitObservation", err)
		_, err = s.WriteMarkers(ctx, sc, []Marker{{Kind: kind, Digest: end, Reason: "fuzz"}})
		ok(t, "WriteMarkers", err)
		ok(t, "ResolveIntent", s.ResolveIntent(ctx, id))
		if _, err := s.Candidates(ctx, scope, end); err != nil {
			t.Fatalf("Candidates: %v", err)
		}
		if _, err := s.Payload(ctx, obs); err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatalf("Payload: %v", err)
		}
	})
}
