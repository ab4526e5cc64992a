package bundle

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bodylog"
)

const (
	upstreamKey = "sk-upstream-CANARY-a1b2c3d4e5"
	clientToken = "relay-token-CANARY-77aa"
)

// recorded is what fake captures answer with.
var (
	jsonAnswer = `{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}],"usage":{"input_tokens":3}}`
	sseFrames  = []string{
		"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_2\",\"status\":\"in_progress\"}}\n\n",
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n",
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_2\",\"status\":\"completed\"}}\n\n",
	}
)

// record writes the four phases of one request into dir, as the handler
// does, and returns dir.
func record(t testing.TB, dir, id string, attempt int, stream bool, frames []string) string {
	t.Helper()
	w, err := bodylog.Open(bodylog.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r := w.Begin(id, attempt, []string{upstreamKey, clientToken})
	r.SetModel("gpt-5.2", stream)
	streamField := "false"
	if stream {
		streamField = "true"
	}
	r.Whole(bodylog.ClientRequest, bodylog.Meta{Method: "POST", URL: "/v1/chat/completions?api_key=" + clientToken,
		Header: http.Header{"Authorization": {"Bearer " + clientToken}, "Content-Type": {"application/json"}, "X-Api-Key": {clientToken}}},
		[]byte(`{"model":"cursor-fast","stream":`+streamField+`,"messages":[{"role":"user","content":"hello"}]}`))
	r.Whole(bodylog.UpstreamRequest, bodylog.Meta{Method: "POST", URL: "https://api.openai.com/v1/responses",
		Header: http.Header{"Authorization": {"Bearer " + upstreamKey}, "Content-Type": {"application/json"},
			"Openai-Organization": {"org-CANARY"}, "X-Client-Request-Id": {id}, "Content-Length": {"99"}}},
		[]byte(`{"model":"gpt-5.2","stream":`+streamField+`,"input":[{"role":"user","content":"hello"}]}`))
	if stream {
		up := r.Start(bodylog.UpstreamResponse, bodylog.Meta{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}, "Set-Cookie": {"s=CANARY"}}})
		cl := r.Start(bodylog.ClientResponse, bodylog.Meta{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}})
		for _, f := range frames {
			up.Write([]byte(f))
			cl.Write([]byte("data: {}\n\n"))
		}
		cl.Write([]byte("data: [DONE]\n\n"))
	} else {
		r.Whole(bodylog.UpstreamResponse, bodylog.Meta{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}}, []byte(jsonAnswer))
		r.Whole(bodylog.ClientResponse, bodylog.Meta{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}}, []byte(`{"object":"chat.completion"}`))
	}
	r.SetOutcome("ok")
	r.Finish()
	if err := w.Close(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if s := w.Stats(); s.Dropped > 0 || s.Disabled {
		t.Fatalf("capture stats %+v", s)
	}
	return dir
}

// indexFile returns the one index file of dir.
func indexFile(t testing.TB, dir string) string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "relay-capture-*.jsonl"))
	if len(names) != 1 {
		t.Fatalf("index files: %v", names)
	}
	return names[0]
}

// editIndex rewrites the index line of phase with f.
func editIndex(t testing.TB, dir string, phase bodylog.Phase, f func(m map[string]any)) {
	t.Helper()
	p := indexFile(t, dir)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if m["phase"] == string(phase) {
			f(m)
			b, _ := json.Marshal(m)
			line = string(b)
		}
		out = append(out, line)
	}
	if err := os.WriteFile(p, []byte(strings.Join(out, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// artifactPath returns the artifact file of phase.
func artifactPath(t testing.TB, dir string, phase bodylog.Phase) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "bodies", "*", "*-"+string(phase)+".gz"))
	if len(m) != 1 {
		t.Fatalf("artifacts of %s: %v", phase, m)
	}
	return m[0]
}

// rewriteArtifact decompresses an artifact, applies f and recompresses it
// (a tamper that keeps the gzip stream valid).
func rewriteArtifact(t testing.TB, path string, f func([]byte) []byte) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if _, err := plain.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(f(plain.Bytes()))
	zw.Close()
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

func exportBytes(t testing.TB, dir, id string, attempt int) ([]byte, *Bundle) {
	t.Helper()
	b, err := Export(ExportOptions{RequestID: id, LogsDir: dir, Attempt: attempt})
	if err != nil {
		t.Fatal(err)
	}
	data, err := Canonical(b)
	if err != nil {
		t.Fatal(err)
	}
	return data, b
}

// forgeEnd appends an end record that matches the records in prefix.
func forgeEnd(t testing.TB, prefix []byte) []byte {
	t.Helper()
	h := sha256.New()
	var size int64
	frames := 0
	for _, line := range bytes.Split(bytes.TrimSpace(prefix), []byte("\n")) {
		var rec bodylog.Record
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Type == bodylog.RecordChunk || rec.Type == bodylog.RecordFrame {
			h.Write([]byte(rec.Data))
			size += int64(len(rec.Data))
			if rec.Type == bodylog.RecordFrame {
				frames++
			}
		}
	}
	end, _ := json.Marshal(bodylog.Record{Type: bodylog.RecordEnd, Size: size, Received: size, Frames: frames, SHA256: hex.EncodeToString(h.Sum(nil))})
	return append(append(prefix, end...), '\n')
}
