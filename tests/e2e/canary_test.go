package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

// Canaries of the sweep. They are deliberately not credential-shaped (no
// "sk-" prefix, no "Bearer "): the relay must find them because it knows
// its own secrets, not because they look like keys.
const (
	sweepKey    = "upstreamkey-CANARY-SWEEP-4411"
	sweepToken  = "relaytoken-CANARY-SWEEP-7722"
	sweepToken2 = "relaytoken-CANARY-SWEEP-second-9933"
)

// fakeFailure is the message the fake upstream puts in every failure; the
// leaky upstream below swaps it for one that echoes the relay's secrets.
const fakeFailure = "The server had an error while processing your request. Sorry about that!"

// leakyUpstream wraps the strict fake so that it behaves like the worst
// plausible upstream: every error message (SSE `error` events flat and
// nested, `response.failed`, JSON `status: "failed"`, non-2xx bodies)
// quotes the credential it was sent and any relay token the client pasted
// into its request body, and the headers the relay passes through carry
// them too.
func leakyUpstream(fake *fakeupstream.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		echo := "credential " + key
		h := w.Header()
		h.Set("X-Request-Id", "req_"+key)
		// what the client pasted into its message comes back too
		for _, tok := range []string{sweepToken, sweepToken2} {
			if bytes.Contains(body, []byte(tok)) {
				echo += " and input " + tok
				h.Add("X-Ratelimit-Remaining-Requests", tok)
				h.Add("Retry-After", "1 "+tok)
			}
		}
		if bytes.Contains(body, []byte("LEAK400")) {
			h.Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"message":"Invalid 'input': %s","type":"invalid_request_error","param":"input","code":null}}`, echo)
			return
		}
		rec := httptest.NewRecorder()
		r.Body = io.NopCloser(bytes.NewReader(body))
		fake.ServeHTTP(rec, r)
		for k, vs := range rec.Header() {
			if k != "Content-Length" {
				h[k] = vs
			}
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(bytes.ReplaceAll(rec.Body.Bytes(), []byte(fakeFailure), []byte(echo)))
	})
}

// canaryCount counts the occurrences of every sweep canary in b, also in
// its percent-decoded form.
func canaryCount(b []byte) int {
	n := 0
	dec, err := url.QueryUnescape(string(b))
	for _, c := range []string{sweepKey, sweepToken, sweepToken2} {
		n += bytes.Count(b, []byte(c))
		if err == nil && dec != string(b) {
			n += strings.Count(dec, c)
		}
	}
	return n
}

// sweepTally counts what the sweep looked at and the canaries found.
type sweepTally struct {
	answers, chunks, headers, logLines, files, bundles, comparisons int
	found                                                           int
}

func (s *sweepTally) check(t *testing.T, what string, b []byte) {
	t.Helper()
	if n := canaryCount(b); n > 0 {
		s.found += n
		t.Errorf("%s holds %d canary occurrences: %.300q", what, n, b)
	}
}

// TestCanarySweep sends requests down every answer and error path of both
// routes, streaming and not, through a relay with capture on and DEBUG
// logs, with the relay token also in an arbitrary header, a query value
// and the message text, against an upstream that echoes the secrets in
// every error and passed-through header. It then counts the canaries in
// every answer, SSE chunk and header, every log line, every capture file,
// every exported bundle and a replay comparison. The goal is 0.
func TestCanarySweep(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{APIKey: sweepKey})
	up := httptest.NewServer(leakyUpstream(fake))
	t.Cleanup(up.Close)
	c := relaytest.Start(t, relaytest.Options{
		Site: `reasoning_relay {
	upstream ` + up.URL + `/v1
	api_key {env.SWEEP_KEY}
	relay_token {env.SWEEP_TOKEN} {env.SWEEP_TOKEN2}
	max_request_bytes 64KiB
	log_bodies {DIR}/captures
}`,
		LogLevel: "DEBUG",
		Env:      []string{"SWEEP_KEY=" + sweepKey, "SWEEP_TOKEN=" + sweepToken, "SWEEP_TOKEN2=" + sweepToken2},
	})
	var tally sweepTally
	var ids []string

	send := func(name, method, path string, body []byte) string {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx(t), method, c.BaseURL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+sweepToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Debug-Token", sweepToken2)
		req.Header.Set("X-Forwarded-Credential", "key="+sweepKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tally.answers++
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			for _, chunk := range bytes.Split(raw, []byte("\n\n")) {
				if len(chunk) > 0 {
					tally.chunks++
					tally.check(t, name+" SSE chunk", chunk)
				}
			}
		} else {
			tally.check(t, name+" answer", raw)
		}
		for k, vs := range resp.Header {
			tally.headers++
			tally.check(t, name+" header "+k, []byte(strings.Join(vs, "\n")))
		}
		return resp.Header.Get("X-Relay-Request-Id")
	}

	pasted := " my relay tokens are " + sweepToken + " and " + sweepToken2 + ", the key " + sweepKey
	query := "?note=" + url.QueryEscape(sweepToken) + "&debug=" + sweepKey
	// two clean requests first (no pasted secrets: their bundles are
	// replayable), for the comparisons
	for _, stream := range []bool{false, true} {
		chat := fmt.Sprintf(`{"model":"gpt-5.2","stream":%v,"messages":[{"role":"user","content":"hello"}]}`, stream)
		ids = append(ids, send(fmt.Sprintf("clean chat stream=%v", stream), http.MethodPost, "/v1/chat/completions"+query, []byte(chat)))
	}
	for _, kind := range []string{"", "[[failed]]", "[[error_flat]]", "[[error_nested]]", "LEAK400"} {
		for _, stream := range []bool{false, true} {
			text := kind + pasted
			chat := fmt.Sprintf(`{"model":"gpt-5.2","stream":%v,"messages":[{"role":"user","content":%q}]}`, stream, text)
			ids = append(ids, send(fmt.Sprintf("chat %s stream=%v", kind, stream), http.MethodPost, "/v1/chat/completions"+query, []byte(chat)))
			resp := fmt.Sprintf(`{"model":"gpt-5.2","stream":%v,"store":false,"include":["reasoning.encrypted_content"],`+
				`"input":[{"type":"message","role":"user","content":%q}]}`, stream, text)
			ids = append(ids, send(fmt.Sprintf("responses %s stream=%v", kind, stream), http.MethodPost, "/v1/responses"+query, []byte(resp)))
		}
	}
	// errors the relay answers itself, with the secrets in the path
	send("404", http.MethodPost, "/v1/"+sweepToken+"/embeddings"+query, []byte(`{}`))
	send("405", http.MethodGet, "/v1/"+sweepKey+"/chat/completions"+query, nil)
	send("400", http.MethodPost, "/v1/chat/completions"+query, []byte(`{"model":"`+sweepToken+`","bogus_`+sweepKey+`":1,"messages":[]}`))
	send("413", http.MethodPost, "/v1/chat/completions"+query, bytes.Repeat([]byte(sweepToken), 10000))
	send("models", http.MethodGet, "/v1/models"+query, nil)

	// captures: wait until every request that reached the upstream is on
	// disk, then read every file (artifacts are gzip)
	capDir := filepath.Join(c.Dir, "captures")
	for _, id := range ids {
		waitCaptured(t, capDir, id)
	}
	err := filepath.WalkDir(capDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if data, err = io.ReadAll(zr); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
		tally.files++
		tally.check(t, "capture file "+filepath.Base(p), data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// bundles of every relayed request, and one comparison replayed
	// against the leaky upstream
	work := t.TempDir()
	env := []string{"SWEEP_REPLAY_KEY=" + sweepKey}
	for i, id := range ids {
		out := filepath.Join(work, fmt.Sprintf("%d.bundle", i))
		stdout, stderr, err := cli(t, env, "reasoning-relay", "replay", "export", "--request-id", id, "--logs-dir", capDir, "--output", out)
		tally.check(t, "export output", []byte(stdout+stderr))
		if err != nil {
			t.Fatalf("export %s: %v\n%s%s", id, err, stdout, stderr)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		tally.bundles++
		tally.check(t, "bundle "+id, data)
		if i > 1 {
			continue // compare the first two (a JSON and a stream answer)
		}
		cmp := filepath.Join(work, fmt.Sprintf("%d.compare", i))
		stdout, stderr, err = cli(t, env, "reasoning-relay", "replay", "compare", "--bundle", out, "--output", cmp,
			"--execute", "--url", up.URL+"/v1/responses", "--header-env", "Authorization=SWEEP_REPLAY_KEY", "--timeout", "30s")
		tally.check(t, "compare output", []byte(stdout+stderr))
		if err != nil {
			t.Fatalf("compare %s: %v\nstdout: %s\nstderr: %s", id, err, stdout, stderr)
		}
		data, err = os.ReadFile(cmp)
		if err != nil {
			t.Fatal(err)
		}
		tally.comparisons++
		tally.check(t, "comparison "+id, data)
	}

	c.Stop()
	logs := c.Logs()
	tally.logLines = strings.Count(logs, "\n")
	tally.check(t, "Caddy's log", []byte(logs))
	if !strings.Contains(logs, `"reason":"upstream_status_400"`) {
		t.Error("the DEBUG log does not show the request outcomes; the sweep saw no log lines of interest")
	}
	t.Logf("figures: canary sweep: %d answers, %d SSE chunks, %d response headers, %d log lines, %d capture files, %d bundles, %d comparisons: %d canary occurrences",
		tally.answers, tally.chunks, tally.headers, tally.logLines, tally.files, tally.bundles, tally.comparisons, tally.found)
}
