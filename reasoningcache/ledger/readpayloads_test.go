package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestPayloadsMatchesPayload checks the bulk read against the one-by-one
// read it replaces on the planner's path: same rows, same outputs, and
// unknown ids refused the same way.
func TestPayloadsMatchesPayload(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{})
	sc := testScope(1)
	var ids []int64
	for i := range 3 {
		id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("s%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		end := dig("e%d", i)
		res, err := s.CommitObservation(ctx, CommitObservationRequest{IntentID: id, EndDigest: end,
			EnvelopeFP: dig("e%s", end), PayloadFP: dig("p%s", end), OutputHash: dig("o%s", end),
			Replayable: true, Payload: fmt.Appendf(nil, `[{"type":"reasoning","n":%d}]`, i), MoveToDelivery: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.PayloadID == 0 {
			t.Fatal("no payload admitted")
		}
		ids = append(ids, res.PayloadID)
	}
	const unknown = 999999
	set, err := s.Payloads(ctx, append([]int64{unknown}, ids...))
	if err != nil {
		t.Fatal(err)
	}
	s.cache = newHotCache(-1, 0) // the set must load outputs itself, not only find them cached
	for _, id := range ids {
		want, err := s.Payload(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := set.Payload(ctx, id)
		if err != nil {
			t.Fatalf("set.Payload(%d): %v", id, err)
		}
		if got.ID != want.ID || got.Size != want.Size || got.RowVersion != want.RowVersion ||
			got.Fingerprint != want.Fingerprint || !got.TouchedAt.Equal(want.TouchedAt) || !bytes.Equal(got.Output, want.Output) {
			t.Fatalf("set.Payload(%d) = %+v, want %+v", id, got, want)
		}
	}
	if _, err := set.Payload(ctx, unknown); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown payload: %v, want ErrNotFound", err)
	}
	if _, err := s.Payload(ctx, unknown); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Payload(unknown): %v, want ErrNotFound", err)
	}
}
