package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

// procStatusKB returns a "Vm…" field of /proc/<pid>/status in KiB.
func procStatusKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestLargeBodiesMemory is the large-body memory campaign, run by hand:
//
//	RELAY_BIGBODY=1 go test ./tests/e2e -run TestLargeBodiesMemory -v
//
// RELAY_BIGBODY_MB (default 60) and RELAY_BIGBODY_N (default 5) set the
// body size and how many are sent at once, RELAY_BIGBODY_BUDGET an
// optional max_request_bytes_in_flight, RELAY_BIGBODY_PARTS=1 the
// content-part form of the message. It sends N concurrent Chat bodies
// of one large user message (the reasoning cache on, as in
// caddyfile.example) to an upstream that reads and discards them, and
// prints Caddy's peak RSS (VmHWM) against the request bytes in flight.
func TestLargeBodiesMemory(t *testing.T) {
	if os.Getenv("RELAY_BIGBODY") == "" {
		t.Skip("set RELAY_BIGBODY=1 to run the large-body memory campaign")
	}
	mb, n := 60, 5
	if v, err := strconv.Atoi(os.Getenv("RELAY_BIGBODY_MB")); err == nil && v > 0 {
		mb = v
	}
	if v, err := strconv.Atoi(os.Getenv("RELAY_BIGBODY_N")); err == nil && v > 0 {
		n = v
	}
	extra := ""
	if v := os.Getenv("RELAY_BIGBODY_BUDGET"); v != "" {
		extra = "max_request_bytes_in_flight " + v
	}
	var mu sync.Mutex
	var upstreamBytes int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, _ := io.Copy(io.Discard, r.Body)
		mu.Lock()
		upstreamBytes += k
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"too long","type":"invalid_request_error","param":null,"code":"context_length_exceeded"}}`)
	}))
	defer up.Close()
	c := relaytest.Start(t, relaytest.Options{
		Global: cacheGlobal,
		Site: `reasoning_relay {
	upstream ` + up.URL + `/v1
	api_key {env.RT_UPSTREAM_KEY}
	relay_token {env.RT_TOKEN}
	max_request_bytes 100MiB
	` + extra + `
}`,
		Env: []string{"RT_UPSTREAM_KEY=" + upstreamKey, "RT_TOKEN=" + relayToken},
	})
	base := procStatusKB(t, c.PID(), "VmRSS")

	// one large user message: mostly plain text, some escapes; with
	// RELAY_BIGBODY_PARTS=1 as a text content part, which the relay
	// rewrites (a plain text message is forwarded as it is)
	var body bytes.Buffer
	open, end := `"content":"`, `"}]}`
	if os.Getenv("RELAY_BIGBODY_PARTS") != "" {
		open, end = `"content":[{"type":"text","text":"`, `"}]}]}`
	}
	body.WriteString(`{"model":"gpt-5.2","messages":[{"role":"system","content":"be brief"},{"role":"user",` + open)
	line := strings.Repeat("the quick brown fox jumps over the lazy dog ", 20) + `\n\"quoted\"\t`
	for body.Len() < mb<<20 {
		body.WriteString(line)
	}
	body.WriteString(end)
	payload := body.Bytes()

	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, c.BaseURL+"/v1/chat/completions", bytes.NewReader(payload))
			req.Header.Set("Authorization", "Bearer "+relayToken)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Logf("request %d: %v", i, err)
				statuses[i] = -1
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	peak := procStatusKB(t, c.PID(), "VmHWM")
	inFlight := int64(n) * int64(len(payload)) >> 10
	fmt.Printf("figures: large bodies: %d x %.1f MiB (%d MiB in flight), statuses %v, upstream received %d MiB; Caddy RSS before %d MiB, peak %d MiB = %.2fx the bytes in flight (%.2fx after the base)\n",
		n, float64(len(payload))/(1<<20), inFlight>>10, statuses, upstreamBytes>>20, base>>10, peak>>10,
		float64(peak)/float64(inFlight), float64(peak-base)/float64(inFlight))
}

// TestLargePlainMessage: a large plain text message, which the relay
// forwards as the client's own bytes (a Responses input message without
// "type"), is accepted by the strict fake upstream and answered.
func TestLargePlainMessage(t *testing.T) {
	r := sharedRelayFor(t)
	text := "large-plain " + strings.Repeat("lorem ipsum ", 10<<10)
	got, err := run(t, r.client(relayToken), openai.ChatCompletionNewParams{
		Model: "cursor-fast", Messages: []openai.ChatCompletionMessageParamUnion{userMsg(text)},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "echo: large-plain lorem ipsum") {
		t.Fatalf("answer %.60q", got)
	}
	var item map[string]any
	var body struct{ Input []json.RawMessage }
	if err := json.Unmarshal(r.upstreamRequest(t, "large-plain").Body, &body); err != nil || len(body.Input) != 1 {
		t.Fatalf("upstream input: %v", err)
	}
	if err := json.Unmarshal(body.Input[0], &item); err != nil || item["content"] != text || item["role"] != "user" {
		t.Fatalf("upstream item: %v", err)
	}
}
