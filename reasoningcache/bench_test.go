package reasoningcache

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
)

// BenchmarkPrepareHit measures Prepare for a ~200 KB Chat history whose
// 20 earlier assistant turns are all replayed: identification, planning
// with its ledger reads, the intent commit (one fsync), and resolving the
// intent again (a second commit) so that the next iteration is not a
// competing generation.
func BenchmarkPrepareHit(b *testing.B) {
	e := newEnv(b, Config{})
	c := newConv(b, canonical.ShapeChat)
	const turns = 20
	para := strings.Repeat("The relay replays the original reasoning of earlier turns. ", 80) // ~4.7 KB
	for k := range turns {
		c.user(fmt.Sprintf("question %d: %s", k, para))
		tu := turn{text: fmt.Sprintf("answer %d: %s", k, para), seed: "b"}
		if k%3 == 1 {
			tu.calls = []call{{name: "read_file", args: fmt.Sprintf(`{"path":"f%d.go"}`, k)}, {name: "grep", args: `{"pattern":"x","n":2}`}}
		}
		e.runTurn(c, k, tu)
		c.assistant(k, tu)
		c.results(k, tu)
	}
	c.user("and now?")
	var size int
	for _, m := range c.history {
		size += len(m)
	}
	ctx := context.Background()
	req := c.request()
	for b.Loop() {
		s, err := e.eng.Prepare(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if s.Replayed() != turns {
			b.Fatalf("replayed %d, want %d (skip %q)", s.Replayed(), turns, s.Skip())
		}
		s.Release(ctx)
	}
	b.ReportMetric(float64(size), "history_bytes")
}

// BenchmarkIdentify is the identification share of BenchmarkPrepareHit
// (the canonical pass over the same history), for comparison.
func BenchmarkIdentify(b *testing.B) {
	e := newEnv(b, Config{})
	c := newConv(b, canonical.ShapeChat)
	para := strings.Repeat("The relay replays the original reasoning of earlier turns. ", 80)
	for k := range 20 {
		c.user(fmt.Sprintf("question %d: %s", k, para))
		c.assistant(k, turn{text: fmt.Sprintf("answer %d: %s", k, para)})
	}
	secret := e.store.Secret()
	for b.Loop() {
		if _, err := canonical.HistoryDigests(secret, c.scope, c.history, canonical.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
