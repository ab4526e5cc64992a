//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/smallfs"
)

// TestDiskFullKeepsAnswering runs Cursor-like conversations through the
// real relay with its ledger on a 16 MiB tmpfs, fills the filesystem, goes
// on, frees it and goes on again, and counts the answers by status per
// phase. A full disk may fail a request only at the moment the guard
// latches; before and after, every request is answered. Skipped where a
// tmpfs cannot be mounted (needs root or CAP_SYS_ADMIN).
func TestDiskFullKeepsAnswering(t *testing.T) {
	dir := smallfs.Mount(t, "16m")
	global := fmt.Sprintf(`	reasoning_cache {
		database %s/data/ledger.sqlite
		enabled true
		reserve 1MiB
	}`, dir)
	r := startRelayWith(t, global, "")
	c := r.client(relayToken)
	filler := filepath.Join(dir, "filler")
	fill := func() { smallfs.Fill(t, filler) }

	convs := make([][]openai.ChatCompletionMessageParamUnion, 4)
	n := 0
	phase := func(name string, rounds int, keepFull bool) (map[string]int, int) {
		counts := map[string]int{}
		before := len(r.fake.Requests())
		for round := 0; round < rounds; round++ {
			for i := range convs {
				n++
				convs[i] = append(convs[i], userMsg(fmt.Sprintf("disk-full conv %d turn %d %s", i, n, strings.Repeat("long context ", 200))))
				text, err := run(t, c, openai.ChatCompletionNewParams{Model: "cursor-fast", Messages: convs[i]}, n%2 == 0)
				if err != nil {
					var ae *openai.Error
					if errors.As(err, &ae) {
						counts[fmt.Sprint(ae.StatusCode)]++
					} else {
						counts["transport error"]++
					}
					convs[i] = convs[i][:len(convs[i])-1]
					continue
				}
				counts["200"]++
				convs[i] = append(convs[i], openai.AssistantMessage(text))
			}
			if keepFull {
				fill()
			}
		}
		replayed := 0
		for _, req := range r.fake.Requests()[before:] {
			if strings.Contains(string(req.Body), "encrypted_content") && strings.Contains(string(req.Body), `"type":"reasoning"`) {
				replayed++
			}
		}
		fmt.Printf("disk-full e2e, phase %-6s answers %v, requests with replayed reasoning %d\n", name, counts, replayed)
		return counts, replayed
	}

	before, replayedBefore := phase("before", 3, false)
	if before["200"] != 12 || replayedBefore == 0 {
		t.Fatalf("before the disk filled: %v, %d replayed", before, replayedBefore)
	}
	if status, _ := relayHealth(r.caddy.BaseURL); status != 200 {
		t.Fatalf("health before the disk filled: %d, want 200", status)
	}
	fill()
	full, _ := phase("full", 6, true)
	if failed := 24 - full["200"]; failed > 1 {
		t.Errorf("full disk: %d of 24 requests failed; at most the one at the latching moment may", failed)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed, _ := phase("freed", 3, false)
	if freed["200"] != 12 {
		t.Errorf("after freeing the disk: %v", freed)
	}
	logs := r.caddy.Logs()
	latched := strings.Contains(logs, "reasoning cache disabled: a safety write failed")
	if latched && strings.Count(logs, `"level":"error"`) != 1 {
		t.Errorf("%d error lines, want the guard's one", strings.Count(logs, `"level":"error"`))
	}
	// a latched guard is what a load balancer must see: health stays 503
	// until the operator has cleared the guard and restarted
	if status, _ := relayHealth(r.caddy.BaseURL); latched && status != 503 {
		t.Errorf("health with the guard latched: %d, want 503", status)
	}
	fmt.Printf("disk-full e2e: guard latched: %v\n", latched)
}
