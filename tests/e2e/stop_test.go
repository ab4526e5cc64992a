package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// waitLogLine waits up to limit for one log line containing every part.
func (r *relay) waitLogLine(parts []string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		for _, line := range strings.Split(r.caddy.Logs(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stopMidStream starts a streaming request, reads its first content
// chunk and goes away, as Cursor does when the user presses Stop. It
// returns the relay's request ID.
func stopMidStream(t *testing.T, c openai.Client, params openai.ChatCompletionNewParams) string {
	t.Helper()
	sctx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	var resp *http.Response
	stream := c.Chat.Completions.NewStreaming(sctx, params, option.WithResponseInto(&resp))
	got := false
	for !got && stream.Next() {
		ch := stream.Current()
		got = len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != ""
	}
	if !got {
		t.Fatalf("the stream to stop ended before its first content: %v", stream.Err())
	}
	cancel()
	stream.Close()
	if resp == nil || resp.Header.Get("X-Relay-Request-Id") == "" {
		t.Fatal("no X-Relay-Request-Id on the stopped stream")
	}
	return resp.Header.Get("X-Relay-Request-Id")
}

// TestStoppedTurnCostsOneTurn is the replay figure of a Cursor session
// where the user presses Stop: conversations of 8 turns whose third answer
// is stopped mid-stream and retried. Every request must replay every
// earlier turn except the stopped position's (whose retry travels as the
// client sent it), and the upstream must never receive reasoning outside
// the branch that produced it. It prints the replay rate over the eligible
// turns and requires at least 0.99 (a check of replay counts, not of
// timing).
func TestStoppedTurnCostsOneTurn(t *testing.T) {
	r := cacheRelay(t, "", "")
	c := r.client(relayToken)
	const convs, turns, stopped = 3, 8, 2
	eligible, replayed, wrong := 0, 0, 0
	for n := range convs {
		var msgs []openai.ChatCompletionMessageParamUnion
		var own []string // response id of each kept answer
		stoppedResp := ""
		for k := range turns {
			text := fmt.Sprintf("stop-c%d-t%d question %d", n, k, k)
			if k == stopped {
				text += " [[slow:20ms]]"
			}
			msgs = append(msgs, userMsg(text))
			params := openai.ChatCompletionNewParams{Model: "cursor-fast", Messages: msgs}
			if k == stopped {
				id := stopMidStream(t, c, params)
				stoppedResp = r.upstreamRequestByID(t, id).ResponseID
				// the relay poisons the position once the stream is torn down
				if !r.waitLogLine([]string{`"request_id":"` + id + `"`, `"reason":"position_poisoned"`}, 10*time.Second) {
					t.Fatalf("the stopped request %s was not recorded as interrupted", id)
				}
			}
			choice, id := completeWithID(t, c, params, k%2 == 0)
			req := r.upstreamRequestByID(t, id)
			// which earlier turns came back with their own reasoning, in order
			next, got := 0, 0
			for _, rr := range req.Replayed {
				i := indexOf(own, rr.ResponseID)
				if i < next || rr.ResponseID == stoppedResp || (k > stopped && i == stopped) {
					wrong++
					t.Errorf("conversation %d turn %d: reasoning of response %s replayed outside its branch", n, k, rr.ResponseID)
					continue
				}
				next = i + 1
				got++
			}
			want := len(own)
			if k > stopped {
				want-- // the stopped position's answer is never replayed there
			}
			if got != want {
				t.Errorf("conversation %d turn %d: %d of %d eligible turns replayed", n, k, got, want)
			}
			eligible += want
			replayed += got
			own = append(own, req.ResponseID)
			msgs = append(msgs, choice.Message.ToParam())
		}
	}
	rate := float64(replayed) / float64(eligible)
	fmt.Printf("figures: stop-and-retry at turn %d of %d, %d conversations: replay rate %.3f (%d of %d eligible turns), wrong replays %d\n",
		stopped+1, turns, convs, rate, replayed, eligible, wrong)
	if rate < 0.99 || wrong != 0 {
		t.Fatalf("replay rate %.3f (want >= 0.99), wrong replays %d", rate, wrong)
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
