package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

// Distinct canaries for every header and query parameter the redaction
// policy covers. None may appear in a capture, bundle, comparison, log
// line or error.
var captureCanaries = map[string]string{
	"Cookie":              "session=cookie-CANARY-1c",
	"Proxy-Authorization": "Basic proxy-CANARY-2d",
	"X-Api-Key":           "xapikey-CANARY-3e",
	"Api-Key":             "apikey-CANARY-4f",
	"OpenAI-Organization": "org-CANARY-5a",
	"OpenAI-Project":      "proj-CANARY-6b",
}

var queryCanaries = map[string]string{
	"api_key": "qkey-CANARY-7c", "access_token": "qtoken-CANARY-8d", "client_secret": "qsecret-CANARY-9e",
	"password": "qpass-CANARY-0f", "credential": "qcred-CANARY-1a", "authorization": "qauth-CANARY-2b",
}

// allCanaries lists every secret of the capture tests.
func allCanaries() []string {
	out := []string{upstreamKey, upstreamKey2, relayToken, otherToken}
	for _, v := range captureCanaries {
		out = append(out, v)
	}
	for _, v := range queryCanaries {
		out = append(out, v)
	}
	return out
}

// captureClient is an OpenAI client that sends every canary header and
// query parameter.
func captureClient(r *relay) openai.Client {
	opts := []option.RequestOption{
		option.WithBaseURL(r.caddy.BaseURL + "/v1/"), option.WithAPIKey(relayToken),
		option.WithMaxRetries(0), option.WithRequestTimeout(60 * time.Second),
	}
	for k, v := range captureCanaries {
		opts = append(opts, option.WithHeader(k, v))
	}
	for k, v := range queryCanaries {
		opts = append(opts, option.WithQuery(k, v))
	}
	return openai.NewClient(opts...)
}

// waitCaptured waits until the index holds all four phases of id.
func waitCaptured(t *testing.T, dir, id string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var phases map[string]bool
	for time.Now().Before(deadline) {
		phases = map[string]bool{}
		names, _ := filepath.Glob(filepath.Join(dir, "relay-capture-*.jsonl"))
		for _, n := range names {
			f, err := os.Open(n)
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var l struct{ RequestID, Phase string }
				if json.Unmarshal(sc.Bytes(), &l) == nil && l.RequestID == id {
					phases[l.Phase] = true
				}
			}
			f.Close()
		}
		if len(phases) == 4 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("request %s was not captured in four phases; found %v", id, phases)
}

// cli runs the Caddy binary with args and extra environment variables.
func cli(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(relaytest.Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// export runs `replay export` and returns the bundle's bytes and the
// command's JSON summary.
func export(t *testing.T, env []string, dir, id, out string) ([]byte, map[string]any) {
	t.Helper()
	stdout, stderr, err := cli(t, env, "reasoning-relay", "replay", "export", "--request-id", id,
		"--logs-dir", dir, "--output", out, "--format", "json")
	if err != nil {
		t.Fatalf("export: %v\n%s%s", err, stdout, stderr)
	}
	var summary map[string]any
	if err := json.Unmarshal([]byte(stdout), &summary); err != nil {
		t.Fatalf("export summary %q: %v", stdout, err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if summary["sha256"] != hex.EncodeToString(sum[:]) {
		t.Fatalf("printed sha256 %v is not the file's", summary["sha256"])
	}
	return data, summary
}

// sweep fails when any canary occurs in text.
func sweep(t *testing.T, what string, text []byte) {
	t.Helper()
	for _, c := range allCanaries() {
		if bytes.Contains(text, []byte(c)) {
			t.Errorf("%s contains the secret %q", what, c)
		}
	}
}

// TestCaptureReplay: capture JSON, SSE and error requests through the real
// relay, export them with the real CLI (also under another TZ and
// GOMAXPROCS), replay them against the fake upstream, and sweep every file
// and log for the canaries.
func TestCaptureReplay(t *testing.T) {
	capDir := filepath.Join(t.TempDir(), "captures")
	r := startRelay(t, "log_bodies "+capDir)
	c := captureClient(r)
	work := t.TempDir()
	var outputs [][]byte

	var resp *http.Response
	// a non-streaming request
	if _, err := c.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model: "cursor-fast", Messages: []openai.ChatCompletionMessageParamUnion{userMsg("capture-json-1")},
	}, option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	jsonID := resp.Header.Get("X-Relay-Request-Id")
	// a streaming request
	st := c.Chat.Completions.NewStreaming(ctx(t), openai.ChatCompletionNewParams{
		Model: "cursor-fast", Messages: []openai.ChatCompletionMessageParamUnion{userMsg("capture-sse-1")},
	}, option.WithResponseInto(&resp))
	for st.Next() {
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	sseID := resp.Header.Get("X-Relay-Request-Id")
	// an upstream error and a stream cut short
	_, err := c.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model: "cursor-fast", Messages: []openai.ChatCompletionMessageParamUnion{userMsg("capture-err [[http_error:429]]")},
	}, option.WithResponseInto(&resp))
	if err == nil {
		t.Fatal("the upstream error did not reach the client")
	}
	errID := resp.Header.Get("X-Relay-Request-Id")
	st = c.Chat.Completions.NewStreaming(ctx(t), openai.ChatCompletionNewParams{
		Model: "cursor-fast", Messages: []openai.ChatCompletionMessageParamUnion{userMsg("capture-cut [[cut]]")},
	}, option.WithResponseInto(&resp))
	for st.Next() {
	}
	cutID := resp.Header.Get("X-Relay-Request-Id")
	// a client that pastes the upstream key into its prompt
	if _, err := c.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model: "cursor-fast", Messages: []openai.ChatCompletionMessageParamUnion{userMsg("capture-paste " + upstreamKey)},
	}, option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	pasteID := resp.Header.Get("X-Relay-Request-Id")
	for _, id := range []string{jsonID, sseID, errID, cutID, pasteID} {
		if id == "" {
			t.Fatal("a response has no X-Relay-Request-Id")
		}
		waitCaptured(t, capDir, id)
	}

	// owner-only files, whatever the umask
	err = filepath.Walk(capDir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
		if strings.HasSuffix(p, ".gz") {
			f, _ := os.Open(p)
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			plain, _ := io.ReadAll(zr)
			f.Close()
			outputs = append(outputs, plain)
		} else if !fi.IsDir() {
			b, _ := os.ReadFile(p)
			outputs = append(outputs, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// determinism: the same bytes twice, and under another TZ and GOMAXPROCS
	b1, s1 := export(t, nil, capDir, jsonID, filepath.Join(work, "json.bundle"))
	b2, _ := export(t, []string{"TZ=Pacific/Chatham", "GOMAXPROCS=1"}, capDir, jsonID, filepath.Join(work, "json2.bundle"))
	if !bytes.Equal(b1, b2) {
		t.Fatal("two exports of the same request differ")
	}
	if s1["replayable"] != true {
		t.Fatalf("json bundle: %v", s1)
	}
	var bundle struct {
		Request struct {
			URL     string
			Headers http.Header
			Body    string
		}
		Captures []struct {
			Index struct {
				Phase   string
				URL     string
				Headers http.Header
			}
		}
	}
	json.Unmarshal(b1, &bundle)
	// the canaries did reach the relay, and were redacted
	cr := bundle.Captures[0].Index
	if cr.Phase != "client_request" || len(cr.Headers) == 0 {
		t.Fatalf("first capture %+v", cr)
	}
	for k := range captureCanaries {
		if got := cr.Headers.Values(k); len(got) != 1 || got[0] != "[REDACTED]" {
			t.Errorf("client header %s captured as %q", k, got)
		}
	}
	for k := range queryCanaries {
		if !strings.Contains(cr.URL, k+"=%5BREDACTED%5D") {
			t.Errorf("query %s not redacted in %s", k, cr.URL)
		}
	}
	if up := r.upstreamRequest(t, "capture-json-1"); string(up.Body) != bundle.Request.Body {
		t.Fatal("the bundle's body is not the literal upstream body")
	}
	if bundle.Request.URL != r.up.URL+"/v1/responses" || bundle.Request.Headers.Get("Authorization") != "[REDACTED]" {
		t.Fatalf("bundle request %s %v", bundle.Request.URL, bundle.Request.Headers)
	}
	sseBundle, s2 := export(t, []string{"TZ=Asia/Kathmandu", "GOMAXPROCS=3"}, capDir, sseID, filepath.Join(work, "sse.bundle"))
	if s2["replayable"] != true {
		t.Fatalf("sse bundle: %v", s2)
	}
	errBundle, _ := export(t, nil, capDir, errID, filepath.Join(work, "err.bundle"))
	cutBundle, s4 := export(t, nil, capDir, cutID, filepath.Join(work, "cut.bundle"))
	if s4["replayable"] != false || !slices.Contains(anyStrings(s4["blockers"]), "unterminated_stream:upstream_response") {
		t.Fatalf("cut bundle: %v", s4)
	}
	pasteBundle, s5 := export(t, nil, capDir, pasteID, filepath.Join(work, "paste.bundle"))
	if s5["replayable"] != false || !slices.Contains(anyStrings(s5["blockers"]), "redacted_body:upstream_request") {
		t.Fatalf("paste bundle: %v", s5)
	}
	outputs = append(outputs, b1, sseBundle, errBundle, cutBundle, pasteBundle)

	// compare against the fake upstream (plain HTTP is allowed on loopback)
	env := []string{"RT_REPLAY_KEY=" + upstreamKey}
	before := len(r.fake.Requests())
	for _, tc := range []struct{ name, bundle string }{{"json", "json.bundle"}, {"sse", "sse.bundle"}} {
		out := filepath.Join(work, tc.name+".compare")
		stdout, stderr, err := cli(t, env, "reasoning-relay", "replay", "compare", "--bundle", filepath.Join(work, tc.bundle),
			"--output", out, "--execute", "--url", r.up.URL+"/v1/responses", "--header-env", "Authorization=RT_REPLAY_KEY", "--timeout", "30s")
		if err != nil {
			t.Fatalf("%s compare: %v\n%s%s", tc.name, err, stdout, stderr)
		}
		outputs = append(outputs, []byte(stdout), []byte(stderr))
		data, _ := os.ReadFile(out)
		outputs = append(outputs, data)
		var cmp struct {
			StatusMatches, JSONShapeMatches, ContentTypeMatches, BodyHashMatches *bool
			SSE                                                                  *struct{ EventTypesMatch, EventShapesMatch *bool }
			Replay                                                               struct{ Status int }
		}
		if err := json.Unmarshal(data, &cmp); err != nil {
			t.Fatal(err)
		}
		if cmp.Replay.Status != 200 || !isTrue(cmp.StatusMatches) || !isTrue(cmp.ContentTypeMatches) || !isTrue(cmp.JSONShapeMatches) {
			t.Fatalf("%s comparison:\n%s", tc.name, data)
		}
		if cmp.BodyHashMatches == nil || *cmp.BodyHashMatches {
			t.Fatalf("%s: fresh response ids should make the hashes differ:\n%s", tc.name, data)
		}
		if tc.name == "sse" && (cmp.SSE == nil || !isTrue(cmp.SSE.EventTypesMatch) || !isTrue(cmp.SSE.EventShapesMatch)) {
			t.Fatalf("sse comparison:\n%s", data)
		}
	}
	if got := len(r.fake.Requests()) - before; got != 2 {
		t.Fatalf("the compares sent %d requests, want 2", got)
	}
	replayed := r.fake.Requests()[before]
	if replayed.Header.Get("Authorization") != "Bearer "+upstreamKey || !strings.Contains(string(replayed.Body), "capture-json-1") {
		t.Fatal("the replay did not carry the key from the environment and the captured body")
	}

	// refusals send nothing and name what is wrong, without secrets
	before = len(r.fake.Requests())
	for _, args := range [][]string{
		{"--bundle", filepath.Join(work, "json.bundle"), "--output", filepath.Join(work, "x"), "--url", r.up.URL + "/v1/responses", "--header-env", "Authorization=RT_REPLAY_KEY"},
		{"--bundle", filepath.Join(work, "json.bundle"), "--output", filepath.Join(work, "x"), "--execute", "--header-env", "Authorization=RT_REPLAY_KEY"},
		{"--bundle", filepath.Join(work, "json.bundle"), "--output", filepath.Join(work, "x"), "--execute", "--url", r.up.URL + "/v1/responses", "--header-env", "Authorization=RT_UNSET_VAR"},
		{"--bundle", filepath.Join(work, "json.bundle"), "--output", filepath.Join(work, "x"), "--execute", "--url", r.up.URL + "/v1/responses"},
		{"--bundle", filepath.Join(work, "cut.bundle"), "--output", filepath.Join(work, "x"), "--execute", "--url", r.up.URL + "/v1/responses", "--header-env", "Authorization=RT_REPLAY_KEY"},
		{"--bundle", filepath.Join(work, "json.bundle"), "--output", filepath.Join(work, "x"), "--execute", "--url", r.up.URL + "/v1/responses?api_key=" + queryCanaries["api_key"], "--header-env", "Authorization=RT_REPLAY_KEY"},
	} {
		stdout, stderr, err := cli(t, env, append([]string{"reasoning-relay", "replay", "compare"}, args...)...)
		if err == nil {
			t.Fatalf("compare %v succeeded", args)
		}
		sweep(t, "compare error output", []byte(stdout+stderr))
		if slices.Contains(args, "Authorization=RT_UNSET_VAR") && !strings.Contains(stderr, "RT_UNSET_VAR") {
			t.Fatalf("the error does not name the variable: %s", stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "x")); err == nil {
		t.Fatal("a refused compare wrote its output")
	}
	if got := len(r.fake.Requests()) - before; got != 0 {
		t.Fatalf("refused compares sent %d requests", got)
	}

	// the canary sweep: captures, index lines, bundles, comparisons, CLI
	// output and Caddy's logs
	for i, o := range outputs {
		sweep(t, fmt.Sprintf("output %d", i), o)
	}
	sweep(t, "caddy logs", []byte(r.caddy.Logs()))
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func isTrue(p *bool) bool { return p != nil && *p }

// TestCaptureResponsesRouteAndReload: POST /responses is captured too, and
// a stream that is still running when Caddy reloads (with the same capture
// directory) is captured completely through the shared writer.
func TestCaptureResponsesRouteAndReload(t *testing.T) {
	capDir := filepath.Join(t.TempDir(), "captures")
	extra := "log_bodies " + capDir
	r := startRelay(t, extra)

	body := `{"model":"gpt-5.2","stream":true,"store":false,"include":["reasoning.encrypted_content"],` +
		`"input":[{"type":"message","role":"user","content":"capture-reload [[slow:150ms]]"}]}`
	req, _ := http.NewRequestWithContext(ctx(t), http.MethodPost, r.caddy.BaseURL+"/v1/responses", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+relayToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get("X-Relay-Request-Id")
	site := strings.ReplaceAll(fmt.Sprintf(siteConfig, extra+"\n\tsse_keepalive 50ms"), "{UPSTREAM}", r.up.URL)
	if err := r.caddy.Reload(relaytest.Options{Site: site, LogLevel: "DEBUG",
		Env: []string{"RT_UPSTREAM_KEY=" + upstreamKey, "RT_TOKEN=" + relayToken}}); err != nil {
		t.Fatal(err)
	}
	streamed, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !strings.Contains(string(streamed), "response.completed") {
		t.Fatalf("stream across the reload: %v\n%s", err, streamed)
	}
	waitCaptured(t, capDir, id)
	bundle, summary := export(t, nil, capDir, id, filepath.Join(t.TempDir(), "b.json"))
	if summary["replayable"] != true {
		t.Fatalf("summary %v", summary)
	}
	if !bytes.Contains(bundle, []byte(`capture-reload`)) {
		t.Fatal("the bundle lacks the request body")
	}
	if strings.Contains(r.caddy.Logs(), "body capture disabled") {
		t.Fatal("capture disabled itself")
	}
	sweep(t, "caddy logs", []byte(r.caddy.Logs()))
}

// TestCaptureUnreachableUpstream: a request whose upstream cannot be
// reached is captured without an upstream body, and its bundle says so.
func TestCaptureUnreachableUpstream(t *testing.T) {
	capDir := filepath.Join(t.TempDir(), "captures")
	dead := fmt.Sprintf("http://127.0.0.1:%d", relaytest.FreePort(t))
	site := strings.ReplaceAll(fmt.Sprintf(siteConfig, "log_bodies "+capDir), "{UPSTREAM}", dead)
	c := relaytest.Start(t, relaytest.Options{Site: site, LogLevel: "DEBUG",
		Env: []string{"RT_UPSTREAM_KEY=" + upstreamKey, "RT_TOKEN=" + relayToken}})
	cl := openai.NewClient(option.WithBaseURL(c.BaseURL+"/v1/"), option.WithAPIKey(relayToken), option.WithMaxRetries(0),
		option.WithHeader("Cookie", captureCanaries["Cookie"]), option.WithQuery("api_key", queryCanaries["api_key"]))
	var resp *http.Response
	_, err := cl.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model: "cursor-fast", Messages: []openai.ChatCompletionMessageParamUnion{userMsg("capture-dead")},
	}, option.WithResponseInto(&resp))
	if err == nil || resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("err %v", err)
	}
	id := resp.Header.Get("X-Relay-Request-Id")
	waitCaptured(t, capDir, id)
	data, summary := export(t, nil, capDir, id, filepath.Join(t.TempDir(), "b.json"))
	if summary["replayable"] != false || !slices.Contains(anyStrings(summary["blockers"]), "missing_body:upstream_response") {
		t.Fatalf("summary %v", summary)
	}
	if !bytes.Contains(data, []byte(`"error": "no_response"`)) {
		t.Fatalf("bundle:\n%s", data)
	}
	sweep(t, "bundle", data)
	sweep(t, "caddy logs", []byte(c.Logs()))
}

// TestCaptureRetriedAttempts: when the upstream rejects replayed reasoning
// and the relay resends without it, both attempts are captured; the export
// picks the resend, and --attempt 1 gives the rejected request.
func TestCaptureRetriedAttempts(t *testing.T) {
	capDir := filepath.Join(t.TempDir(), "captures")
	r := cacheRelay(t, "", "log_bodies "+capDir)
	cv := newConvo(t, r, relayToken, "capretry", nil)
	cv.say("one", false)
	cv.say("two", true)
	r.mu.Lock()
	r.fake = fakeupstream.New(fakeupstream.Options{APIKey: upstreamKey}) // old ciphertext now fails
	r.mu.Unlock()
	cv.expect = false
	cv.say("three", false)

	// the request that was retried is the one with a second attempt
	var id string
	deadline := time.Now().Add(15 * time.Second)
	for id == "" && time.Now().Before(deadline) {
		names, _ := filepath.Glob(filepath.Join(capDir, "relay-capture-*.jsonl"))
		for _, n := range names {
			data, _ := os.ReadFile(n)
			for _, line := range strings.Split(string(data), "\n") {
				var l struct {
					RequestID string
					Attempt   int
					Phase     string
				}
				if json.Unmarshal([]byte(line), &l) == nil && l.Attempt == 2 && l.Phase == "client_response" {
					id = l.RequestID
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if id == "" {
		t.Fatal("no request was captured with a second attempt")
	}
	work := t.TempDir()
	last, s := export(t, nil, capDir, id, filepath.Join(work, "last.bundle"))
	if s["attempt"] != float64(2) || s["replayable"] != true {
		t.Fatalf("latest attempt: %v", s)
	}
	var s1 map[string]any
	stdout, stderr, err := cli(t, nil, "reasoning-relay", "replay", "export", "--request-id", id, "--logs-dir", capDir,
		"--output", filepath.Join(work, "first.bundle"), "--attempt", "1", "--format", "json")
	if err != nil {
		t.Fatalf("export --attempt 1: %v\n%s%s", err, stdout, stderr)
	}
	json.Unmarshal([]byte(stdout), &s1)
	if s1["attempt"] != float64(1) || !slices.Contains(anyStrings(s1["warnings"]), "missing_phase:client_response") {
		t.Fatalf("attempt 1: %v", s1)
	}
	b1, _ := os.ReadFile(filepath.Join(work, "first.bundle"))
	if !bytes.Contains(b1, []byte("invalid_encrypted_content")) || !bytes.Contains(b1, []byte("encrypted_content")) {
		t.Fatal("attempt 1 lacks the rejected request or the rejection")
	}
	if bytes.Equal(b1, last) {
		t.Fatal("the two attempts exported the same bundle")
	}
	sweep(t, "bundles", append(b1, last...))
}
