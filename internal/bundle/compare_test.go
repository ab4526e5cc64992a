package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCheckEndpoint(t *testing.T) {
	cases := []struct {
		url        string
		authorized bool
		ok         bool
	}{
		{TrustedEndpoint, false, true},
		{"https://api.openai.com/v1/responses/", false, false},
		{"https://evil.example/v1/responses", false, false},
		{"https://evil.example/v1/responses", true, true},
		{"http://api.openai.com/v1/responses", true, false},
		{"http://127.0.0.1:8080/v1/responses", true, true},
		{"http://[::1]:8080/v1/responses", true, true},
		{"http://localhost:8080/v1/responses", true, true},
		{"http://127.0.0.1.evil.example/v1/responses", true, false},
		{"http://10.0.0.1/v1/responses", true, false},
		{"https://user:pass@gw.example/v1/responses", true, false},
		{"https://gw.example/v1/responses#frag", true, false},
		{"https://gw.example/v1/responses#", true, false},
		{"https://gw.example/v1/responses?api_key=x", true, false},
		{"https://gw.example/v1/responses?X-Auth-Token=x", true, false},
		{"https://gw.example/v1/responses?api-version=2025-01-01", true, true},
		{"ftp://gw.example/v1/responses", true, false},
		{"/v1/responses", true, false},
		{"https:opaque", true, false},
	}
	for _, c := range cases {
		_, err := CheckEndpoint(c.url, c.authorized)
		if (err == nil) != c.ok {
			t.Errorf("CheckEndpoint(%q, %v) = %v", c.url, c.authorized, err)
		}
		if err != nil && strings.Contains(err.Error(), "=x") {
			t.Errorf("error repeats a query value: %v", err)
		}
	}
}

// countingReader serves n bytes and counts what was read.
type countingReader struct {
	left, read int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, io.EOF
	}
	n := int64(len(p))
	if n > c.left {
		n = c.left
	}
	c.left -= n
	c.read += n
	return int(n), nil
}

func TestBoundedReader(t *testing.T) {
	src := &countingReader{left: 3 << 20}
	cancelled := false
	br := &BoundedReader{R: src, Cap: MaxStoredResponse, Cancel: func() { cancelled = true }}
	if err := br.ReadAll(); err != nil {
		t.Fatal(err)
	}
	if !br.Truncated() || !cancelled || len(br.Bytes()) != MaxStoredResponse {
		t.Fatalf("truncated %v cancelled %v stored %d", br.Truncated(), cancelled, len(br.Bytes()))
	}
	if br.Total() <= MaxStoredResponse || br.Total() != src.read || src.read > MaxStoredResponse+32<<10 {
		t.Fatalf("total %d, read %d: the read went on past the cap", br.Total(), src.read)
	}
	small := &BoundedReader{R: strings.NewReader("hello"), Cap: MaxStoredResponse}
	if err := small.ReadAll(); err != nil || small.Truncated() || string(small.Bytes()) != "hello" || small.Total() != 5 {
		t.Fatalf("small: %v %q", err, small.Bytes())
	}
	exact := &BoundedReader{R: &countingReader{left: 100}, Cap: 100}
	if err := exact.ReadAll(); err != nil || exact.Truncated() {
		t.Fatal("a body of exactly the cap was truncated")
	}
}

func TestShapeBounds(t *testing.T) {
	paths, ok := Shape([]byte(`{"a":[{"b":1},{"c":"x","b":2}],"d/e":null,"f":true}`))
	want := []string{"/a/*/b:number", "/a/*/c:string", "/a/*:object", "/a:array", "/d~1e:null", "/f:boolean", ":object"}
	if !ok || strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Fatalf("shape %v %v", ok, paths)
	}
	deep := strings.Repeat(`{"a":`, 25) + "1" + strings.Repeat("}", 25)
	if _, ok := Shape([]byte(deep)); ok {
		t.Fatal("depth bound not reported")
	}
	var wide bytes.Buffer
	wide.WriteString("{")
	for i := range 2500 {
		fmt.Fprintf(&wide, `"k%d":1,`, i)
	}
	wide.WriteString(`"z":1}`)
	if p, ok := Shape(wide.Bytes()); ok || len(p) > MaxShapePaths {
		t.Fatalf("path bound: ok %v, %d paths", ok, len(p))
	}
	if _, ok := Shape([]byte(`{"a":1} {"b":2}`)); ok {
		t.Fatal("two documents accepted")
	}
}

// upstream is a loopback server answering replays.
func upstream(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) (string, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+upstreamKey {
			w.WriteHeader(401)
			io.WriteString(w, `{"error":{"message":"bad key","type":"invalid_request_error"}}`)
			return
		}
		if r.Header.Get("Openai-Organization") != "org-real" || r.Header.Get("Content-Length") != "" && r.ContentLength <= 0 {
			w.WriteHeader(400)
			return
		}
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1/responses", &hits
}

var env = map[string]string{"UP_KEY": upstreamKey, "ORG": "org-real"}

func lookup(k string) (string, bool) { v, ok := env[k]; return v, ok }

func TestCompareJSON(t *testing.T) {
	dir := record(t, filepath.Join(t.TempDir(), "cap"), "rr_cmp", 1, false, nil)
	_, b := exportBytes(t, dir, "rr_cmp", 0)
	url, hits := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !bytes.Equal(body, []byte(b.Request.Body)) {
			w.WriteHeader(400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "s="+upstreamKey)
		io.WriteString(w, strings.Replace(jsonAnswer, `"hi"`, `"hello there"`, 1))
	})
	opts := CompareOptions{Execute: true, URL: url, HeaderEnv: []string{"Authorization=UP_KEY", "openai-organization=ORG"}, LookupEnv: lookup, Timeout: 5 * time.Second}
	c, err := Compare(t.Context(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if *c.StatusMatches != true || *c.ContentTypeMatches != true || *c.JSONShapeMatches != true || *c.BodyHashMatches != false {
		t.Fatalf("matches %v %v %v %v", *c.StatusMatches, *c.ContentTypeMatches, *c.JSONShapeMatches, *c.BodyHashMatches)
	}
	out, _ := Canonical(c)
	if bytes.Contains(out, []byte(upstreamKey)) || bytes.Contains(out, []byte("org-real")) {
		t.Fatalf("comparison holds a secret:\n%s", out)
	}
	if !bytes.Contains(out, []byte(`"statusMatches": true`)) || !bytes.Contains(out, []byte(`"Set-Cookie": [`)) {
		t.Fatalf("comparison:\n%s", out)
	}

	// refusals: nothing is sent
	before := hits.Load()
	refusals := map[string]CompareOptions{
		"no --execute":         {URL: url, HeaderEnv: opts.HeaderEnv, LookupEnv: lookup},
		"untrusted bundle URL": {Execute: true, HeaderEnv: opts.HeaderEnv, LookupEnv: func(string) (string, bool) { return "", false }},
		"missing env":          {Execute: true, URL: url, HeaderEnv: []string{"Authorization=NOPE_VAR", "openai-organization=ORG"}, LookupEnv: lookup},
		"unfilled header":      {Execute: true, URL: url, HeaderEnv: []string{"Authorization=UP_KEY"}, LookupEnv: lookup},
		"bad header-env":       {Execute: true, URL: url, HeaderEnv: []string{"Authorization: sk-abc"}, LookupEnv: lookup},
		"timeout too short":    {Execute: true, URL: url, HeaderEnv: opts.HeaderEnv, LookupEnv: lookup, Timeout: time.Millisecond},
		"timeout too long":     {Execute: true, URL: url, HeaderEnv: opts.HeaderEnv, LookupEnv: lookup, Timeout: time.Hour},
		"plain http remote":    {Execute: true, URL: "http://192.0.2.1/v1/responses", HeaderEnv: opts.HeaderEnv, LookupEnv: lookup},
	}
	for name, o := range refusals {
		_, err := Compare(t.Context(), b, o)
		if err == nil {
			t.Errorf("%s: not refused", name)
			continue
		}
		if strings.Contains(err.Error(), upstreamKey) {
			t.Errorf("%s: error leaks the key", name)
		}
		if name == "missing env" && !strings.Contains(err.Error(), "NOPE_VAR") {
			t.Errorf("missing env error does not name the variable: %v", err)
		}
		if name == "unfilled header" && !strings.Contains(err.Error(), "Openai-Organization") {
			t.Errorf("unfilled header error does not name it: %v", err)
		}
	}
	get := *b
	r := *b.Request
	r.Method = "GET"
	get.Request = &r
	if _, err := Compare(t.Context(), &get, opts); err == nil {
		t.Error("GET replayed")
	}
	if hits.Load() != before {
		t.Fatalf("a refused compare sent %d requests", hits.Load()-before)
	}
}

func TestCompareSSE(t *testing.T) {
	dir := record(t, filepath.Join(t.TempDir(), "cap"), "rr_sse", 1, true, sseFrames)
	_, b := exportBytes(t, dir, "rr_sse", 0)
	frames := sseFrames
	url, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, f := range frames {
			io.WriteString(w, strings.ReplaceAll(f, "\n", "\r\n")) // framing differences do not matter
			w.(http.Flusher).Flush()
		}
	})
	opts := CompareOptions{Execute: true, URL: url, HeaderEnv: []string{"Authorization=UP_KEY", "Openai-Organization=ORG"}, LookupEnv: lookup}
	c, err := Compare(t.Context(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if c.SSE == nil || !*c.SSE.EventTypesMatch || !*c.SSE.EventShapesMatch || !*c.JSONShapeMatches || !*c.BodyHashMatches {
		out, _ := json.MarshalIndent(c, "", " ")
		t.Fatalf("comparison %s", out)
	}
	// a different stream: one more delta, and a changed event shape
	frames = []string{sseFrames[0], sseFrames[1], sseFrames[1],
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":1}}\n\n"}
	c, err = Compare(t.Context(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if *c.SSE.EventTypesMatch || *c.JSONShapeMatches || *c.BodyHashMatches || c.SSE.FirstDifference == "" {
		t.Fatalf("differences not found: %+v", c.SSE)
	}
	// a body past the cap: comparisons are null, not false
	frames = []string{sseFrames[0], "event: big\ndata: \"" + strings.Repeat("x", MaxStoredResponse) + "\"\n\n"}
	c, err = Compare(t.Context(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Replay.Truncated || c.BodyHashMatches != nil || c.JSONShapeMatches != nil || c.StatusMatches == nil {
		t.Fatalf("truncated: %+v hash %v shape %v", c.Replay, c.BodyHashMatches, c.JSONShapeMatches)
	}
	if c.Replay.StoredBytes != MaxStoredResponse || c.Replay.BodyBytes <= MaxStoredResponse {
		t.Fatalf("stored %d of %d", c.Replay.StoredBytes, c.Replay.BodyBytes)
	}
}

func TestCompareNoRedirectsAndUnreachable(t *testing.T) {
	dir := record(t, filepath.Join(t.TempDir(), "cap"), "rr_redir", 1, false, nil)
	_, b := exportBytes(t, dir, "rr_redir", 0)
	var followed atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { followed.Add(1) }))
	defer target.Close()
	url, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	})
	opts := CompareOptions{Execute: true, URL: url, HeaderEnv: []string{"Authorization=UP_KEY", "Openai-Organization=ORG"}, LookupEnv: lookup}
	c, err := Compare(t.Context(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if followed.Load() != 0 || c.Replay.Status != http.StatusTemporaryRedirect || *c.StatusMatches {
		t.Fatalf("redirect followed %d, status %d", followed.Load(), c.Replay.Status)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	opts.URL = "http://127.0.0.1:1/v1/responses"
	c, err = Compare(ctx, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if c.Replay.Error == "" || !c.Replay.Missing || c.StatusMatches != nil || c.BodyHashMatches != nil {
		t.Fatalf("unreachable: %+v", c.Replay)
	}
}
