package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

// healthClient asks on a new connection every time, as a load
// balancer's health checker may, so that a draining server's closed
// keep-alive connections do not count as answers.
var healthClient = &http.Client{
	Transport: &http.Transport{DisableKeepAlives: true},
	Timeout:   5 * time.Second,
}

// relayHealth asks base/v1/health; status 0 means the relay did not answer
// (connection refused or reset).
func relayHealth(base string) (status int, body string) {
	resp, err := healthClient.Get(base + "/v1/health")
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHealthRoute: GET …/health answers unauthenticated with exactly
// {"status":"ok"} and reveals nothing else; HEAD works, other methods
// are refused.
func TestHealthRoute(t *testing.T) {
	r := sharedRelayFor(t)
	status, body := relayHealth(r.caddy.BaseURL)
	if status != http.StatusOK || body != `{"status":"ok"}` {
		t.Fatalf("health: %d %q, want 200 {\"status\":\"ok\"}", status, body)
	}
	resp, err := http.Head(r.caddy.BaseURL + "/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("HEAD health: %d, Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	resp, err = http.Post(r.caddy.BaseURL+"/v1/health", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST health: %d, want 405", resp.StatusCode)
	}
}

// TestDrainOnSIGTERM: SIGTERM to a relay with a stream in flight. The
// health route answers 503 from the start of the drain (Caddy's
// shutdown_delay), the stream completes within the grace period, Caddy
// closes the ledger and exits cleanly, and the stream's turn was
// recorded: after a restart on the same ledger it is replayed.
func TestDrainOnSIGTERM(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{APIKey: upstreamKey})
	up := httptest.NewServer(fake)
	defer up.Close()
	opts := relaytest.Options{
		Global:      cacheGlobal + "\n\tshutdown_delay 2s",
		Site:        strings.ReplaceAll(fmt.Sprintf(siteConfig, ""), "{UPSTREAM}", up.URL),
		Env:         []string{"RT_UPSTREAM_KEY=" + upstreamKey, "RT_TOKEN=" + relayToken},
		GracePeriod: "30s",
	}
	c := relaytest.Start(t, opts)
	r := &relay{caddy: c, fake: fake}
	if status, _ := relayHealth(c.BaseURL); status != http.StatusOK {
		t.Fatalf("health before the drain: %d", status)
	}

	// a stream of about 3s: 12 events, 250ms apart
	first := userMsg("drain-turn1 [[slow:250ms]]")
	done := streamInBackground(t, r, first)
	waitUpstream(t, fake, "drain-turn1")
	c.Terminate()
	// Caddy logs this once it has begun to exit, before it stops any app
	if !c.WaitLog("exiting; byeee", 10*time.Second) {
		t.Fatalf("caddy did not begin to exit:\n%s", c.Logs())
	}

	// poll the health route until the stream ends
	var statuses []int
	var unhealthyBody string
	var res streamResult
poll:
	for {
		select {
		case res = <-done:
			break poll
		default:
		}
		status, body := relayHealth(c.BaseURL)
		if status == http.StatusServiceUnavailable && unhealthyBody == "" {
			unhealthyBody = body
		}
		if status != 0 && (len(statuses) == 0 || statuses[len(statuses)-1] != status) {
			statuses = append(statuses, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res.err != nil {
		t.Fatalf("the stream in flight at SIGTERM failed: %v", res.err)
	}
	t.Logf("figures: health answers during the drain (changes only): %v", statuses)
	if len(statuses) != 1 || statuses[0] != http.StatusServiceUnavailable {
		t.Fatalf("health during the drain: %v, want only 503", statuses)
	}
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    string  `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(unhealthyBody), &e); err != nil || e.Error.Type != "server_error" || e.Error.Code != "relay_unavailable" || e.Error.Message == "" {
		t.Fatalf("503 body is not OpenAI's error shape: %q (%v)", unhealthyBody, err)
	}
	if exited, err := c.Wait(30 * time.Second); !exited || err != nil {
		t.Fatalf("caddy after SIGTERM: exited=%v err=%v\n%s", exited, err, c.Logs())
	}
	if !strings.Contains(c.Logs(), `"msg":"ledger closed"`) {
		t.Fatal("the ledger was not closed on the way out")
	}

	// restart on the same ledger: the drained stream's turn replays
	c2 := relaytest.Start(t, relaytest.Options{Global: opts.Global, Site: opts.Site, Env: opts.Env, Dir: c.Dir, Port: c.Port})
	r2 := &relay{caddy: c2, fake: fake}
	turn1 := r2.upstreamRequest(t, "drain-turn1").ResponseID
	if _, err := run(t, r2.client(relayToken), openai.ChatCompletionNewParams{
		Model:    "cursor-fast",
		Messages: []openai.ChatCompletionMessageParamUnion{first, res.msg.ToParam(), userMsg("drain-turn2")},
	}, false); err != nil {
		t.Fatal(err)
	}
	replayed := r2.upstreamRequest(t, "drain-turn2").Replayed
	if len(replayed) == 0 || replayed[0].ResponseID != turn1 {
		t.Fatalf("after the restart the drained turn was not replayed: %+v", replayed)
	}
}

// streamMessage runs one streaming chat completion and returns the accumulated
// message.
func streamMessage(ctx context.Context, c openai.Client, params openai.ChatCompletionNewParams) (openai.ChatCompletionMessage, error) {
	s := c.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		return openai.ChatCompletionMessage{}, err
	}
	if len(acc.Choices) == 0 {
		return openai.ChatCompletionMessage{}, fmt.Errorf("stream without choices")
	}
	return acc.Choices[0].Message, nil
}

// waitUpstream waits until the fake has received a request containing
// marker.
func waitUpstream(t *testing.T, fake *fakeupstream.Server, marker string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, req := range fake.Requests() {
			if strings.Contains(string(req.Body), marker) {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the upstream never received %q", marker)
}

// TestDrainOnSiteRemoval: a `caddy reload` to a configuration without the
// relay's site and cache while a stream is in flight. The site stops
// answering health with 200 at once, the stream completes, the ledger
// closes once it has ended, and the turn was recorded: a reload back
// replays it.
func TestDrainOnSiteRemoval(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{APIKey: upstreamKey})
	up := httptest.NewServer(fake)
	defer up.Close()
	opts := relaytest.Options{
		Global:      cacheGlobal,
		Site:        strings.ReplaceAll(fmt.Sprintf(siteConfig, ""), "{UPSTREAM}", up.URL),
		Env:         []string{"RT_UPSTREAM_KEY=" + upstreamKey, "RT_TOKEN=" + relayToken},
		GracePeriod: "30s",
	}
	c := relaytest.Start(t, opts)
	r := &relay{caddy: c, fake: fake}

	first := userMsg("removal-turn1 [[slow:200ms]]")
	done := streamInBackground(t, r, first)
	waitUpstream(t, fake, "removal-turn1")
	if err := c.Reload(relaytest.Options{Site: `respond "gone" 404`, Env: opts.Env, GracePeriod: opts.GracePeriod}); err != nil {
		t.Fatal(err)
	}
	if status, _ := relayHealth(c.BaseURL); status != http.StatusNotFound {
		t.Fatalf("health after the site was removed: %d, want the new configuration's 404", status)
	}
	if len(done) == 0 && strings.Contains(c.Logs(), `"msg":"ledger closed"`) {
		t.Fatal("the ledger closed under a stream still running")
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("the stream in flight during the reload failed: %v", res.err)
	}
	if !c.WaitLog(`"msg":"ledger closed"`, 10*time.Second) {
		t.Fatal("the ledger did not close after the last stream on it ended")
	}

	if err := c.Reload(opts); err != nil {
		t.Fatal(err)
	}
	turn1 := r.upstreamRequest(t, "removal-turn1").ResponseID
	if _, err := run(t, r.client(relayToken), openai.ChatCompletionNewParams{
		Model:    "cursor-fast",
		Messages: []openai.ChatCompletionMessageParamUnion{first, res.msg.ToParam(), userMsg("removal-turn2")},
	}, false); err != nil {
		t.Fatal(err)
	}
	replayed := r.upstreamRequest(t, "removal-turn2").Replayed
	if len(replayed) == 0 || replayed[0].ResponseID != turn1 {
		t.Fatalf("the turn streamed across the site's removal was not replayed: %+v", replayed)
	}
}

// streamResult is the outcome of a stream run by streamInBackground.
type streamResult struct {
	msg openai.ChatCompletionMessage
	err error
}

// streamInBackground starts a one-message streamed chat request and
// returns the channel its outcome arrives on.
func streamInBackground(t *testing.T, r *relay, first openai.ChatCompletionMessageParamUnion) <-chan streamResult {
	done := make(chan streamResult, 1)
	go func() {
		msg, err := streamMessage(ctx(t), r.client(relayToken), openai.ChatCompletionNewParams{
			Model: "cursor-fast", Messages: []openai.ChatCompletionMessageParamUnion{first},
		})
		done <- streamResult{msg, err}
	}()
	return done
}
