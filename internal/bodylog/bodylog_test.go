package bodylog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

const secret = "relay-token-CANARY-c4p"

func open(t *testing.T, opts Options) *Writer {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = filepath.Join(t.TempDir(), "cap")
	}
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(5 * time.Second) })
	return w
}

// lines reads every index line under dir.
func lines(t *testing.T, dir string) []IndexLine {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "relay-capture-*.jsonl"))
	var out []IndexLine
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var l IndexLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatal(err)
			}
			out = append(out, l)
		}
		f.Close()
	}
	return out
}

func readArtifact(t *testing.T, dir string, l IndexLine) *Artifact {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(l.Body.Path)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := ReadArtifact(f, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(&l, a); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestRoundTripAndPermissions(t *testing.T) {
	old := setUmask(0)
	defer setUmask(old)
	dir := filepath.Join(t.TempDir(), "a", "cap")
	w := open(t, Options{Dir: dir})
	r := w.Begin("rr_0123abcd", 1, []string{secret})
	r.SetModel("gpt-5.2", true)
	hdr := http.Header{"Authorization": {"Bearer " + secret}, "Content-Type": {"application/json"}, "Cookie": {"c=" + secret}}
	r.Whole(ClientRequest, Meta{Method: "POST", URL: "/v1/chat/completions?api_key=" + secret, Header: hdr},
		[]byte(`{"model":"m","note":"`+secret+`","bin":"\u00e9"}`))
	r.NoBody(UpstreamRequest, Meta{Method: "POST", URL: "https://up.example/v1/responses"}, "upstream_unreachable")
	up := r.Start(UpstreamResponse, Meta{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}})
	up.Write([]byte("event: response.created\ndata: {\"type\":\"response.created\"}\n\n"))
	time.Sleep(2 * time.Millisecond)
	up.Write([]byte("event: response.completed\ndata: {\"type\":\"response.completed\"}\n\n"))
	cl := r.Start(ClientResponse, Meta{Status: 502, Header: http.Header{"Content-Type": {"application/json"}, "Set-Cookie": {"x"}}})
	cl.Write([]byte{'{', 0xff, '}'})
	r.SetOutcome("upstream_truncated")
	r.Finish()
	r.Finish()
	if err := w.Close(5 * time.Second); err != nil {
		t.Fatal(err)
	}

	ls := lines(t, dir)
	if len(ls) != 4 {
		t.Fatalf("%d index lines", len(ls))
	}
	by := map[Phase]IndexLine{}
	for _, l := range ls {
		by[l.Phase] = l
		raw, _ := json.Marshal(l)
		if strings.Contains(string(raw), secret) {
			t.Fatalf("secret in index line %s", raw)
		}
	}
	cr := by[ClientRequest]
	if cr.Headers.Get("Authorization") != "[REDACTED]" || cr.Headers.Get("Cookie") != "[REDACTED]" ||
		!strings.Contains(cr.URL, "api_key=%5BREDACTED%5D") || cr.Model != "gpt-5.2" || !cr.Stream {
		t.Fatalf("client_request line %+v", cr)
	}
	a := readArtifact(t, dir, cr)
	if strings.Contains(string(a.Body), secret) || cr.Body.Redactions != 1 || cr.Body.Received <= cr.Body.Size-8 {
		t.Fatalf("body %s ref %+v", a.Body, cr.Body)
	}
	if u := by[UpstreamRequest]; u.Body != nil || u.Error != "upstream_unreachable" {
		t.Fatalf("upstream_request %+v", u)
	}
	ur := by[UpstreamResponse]
	a = readArtifact(t, dir, ur)
	if ur.Body.Format != FormatSSE || len(a.Frames) != 2 || a.Frames[1].T < 2000 || ur.Error != "upstream_truncated" {
		t.Fatalf("upstream_response %+v frames %+v", ur, a.Frames)
	}
	a = readArtifact(t, dir, by[ClientResponse])
	if !bytes.Equal(a.Body, []byte{'{', 0xff, '}'}) || by[ClientResponse].Headers.Get("Set-Cookie") != "[REDACTED]" {
		t.Fatalf("client_response %q", a.Body)
	}
	// permissions, whatever the umask
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if checkModes && fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
		return nil
	})
}

func TestTruncation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cap")
	w := open(t, Options{Dir: dir, MaxArtifactBytes: 100})
	r := w.Begin("rr_trunc", 2, nil)
	r.Whole(UpstreamRequest, Meta{Method: "POST"}, bytes.Repeat([]byte("a"), 250))
	b := r.Start(UpstreamResponse, Meta{Header: http.Header{"Content-Type": {"text/event-stream"}}})
	for range 5 {
		b.Write(bytes.Repeat([]byte("b"), 30))
	}
	r.Finish()
	_ = w.Close(5 * time.Second)
	for _, l := range lines(t, dir) {
		a := readArtifact(t, dir, l)
		if !l.Body.Truncated || !a.Truncated || l.Body.Size != 100 || len(a.Body) != 100 || l.Body.Received != 250 && l.Body.Received != 150 {
			t.Fatalf("%s: %+v", l.Phase, l.Body)
		}
		if l.Attempt != 2 {
			t.Fatal("attempt")
		}
	}
}

func TestQueueFullMergesThenDropsWithoutWaiting(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	dir := filepath.Join(t.TempDir(), "cap")
	w := open(t, Options{Dir: dir, WriteTimeout: time.Minute, Logger: zap.New(core)})
	release := make(chan struct{})
	w.beforeWrite = func(string) error { <-release; return nil }
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	start := time.Now()
	// small writes join the last queued one when the queue is full
	for i := range 10 {
		begin(w, "rr_queue", i+1, nil).Whole(ClientRequest, Meta{}, []byte{byte('0' + i)})
	}
	if s := w.Stats(); s.Merged == 0 || s.Dropped != 0 {
		t.Fatalf("small writes: %+v", s)
	}
	// big ones cannot: they are dropped
	big := bytes.Repeat([]byte("b"), DefaultMaxArtifactBytes)
	for i := range 4 {
		begin(w, "rr_queue", 100+i, nil).Whole(ClientRequest, Meta{}, big)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("submitting waited %v", d)
	}
	if s := w.Stats(); s.Dropped == 0 {
		t.Fatalf("nothing dropped: %+v", s)
	}
	if n := w.outstanding(); n > DefaultMaxOutstanding {
		t.Fatalf("%d outstanding", n)
	}
	close(release)
	_ = w.Close(5 * time.Second)
	if w.Disabled() {
		t.Fatal("a full queue disabled the writer")
	}
	if logs.Len() != 1 || !strings.Contains(logs.All()[0].Message, "dropping") {
		t.Fatalf("%d warnings about drops", logs.Len())
	}
	// every small request made it to the index
	seen := map[int]bool{}
	for _, l := range lines(t, dir) {
		seen[l.Attempt] = true
		readArtifact(t, dir, l)
	}
	for i := range 10 {
		if !seen[i+1] {
			t.Fatalf("attempt %d missing", i+1)
		}
	}
}

func TestSlowWriteDisablesOnce(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	dir := filepath.Join(t.TempDir(), "cap")
	w := open(t, Options{Dir: dir, WriteTimeout: 20 * time.Millisecond, Logger: zap.New(core)})
	w.beforeWrite = func(string) error { time.Sleep(60 * time.Millisecond); return nil }
	begin(w, "rr_slow", 1, nil).Whole(ClientRequest, Meta{}, []byte("x"))
	for deadline := time.Now().Add(10 * time.Second); !w.Disabled() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if w.Begin("rr_slow", 2, nil) != nil {
		t.Fatal("a disabled writer began a request")
	}
	w.submit(job{{rel: "x", data: []byte("x")}})
	_ = w.Close(5 * time.Second)
	if !w.Disabled() || logs.Len() != 1 {
		t.Fatalf("disabled %v, %d warnings", w.Disabled(), logs.Len())
	}
}

func TestFailingWriteWarnsSanitized(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	dir := filepath.Join(t.TempDir(), "cap")
	w := open(t, Options{Dir: dir, Logger: zap.New(core)})
	w.beforeWrite = func(string) error { return errors.New("disk says sk-ABCDEFGHIJKLMNOPQRSTUVWX\nforged line") }
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			begin(w, "rr_fail", 1, nil).Whole(ClientRequest, Meta{}, []byte("x"))
		}()
	}
	wg.Wait()
	_ = w.Close(5 * time.Second)
	disabled := logs.FilterMessageSnippet("disabled")
	if disabled.Len() != 1 {
		t.Fatalf("%d warnings about disabling", disabled.Len())
	}
	msg := disabled.All()[0].ContextMap()["error"].(string)
	if strings.Contains(msg, "sk-ABC") || strings.Contains(msg, "\n") {
		t.Fatalf("unsanitized warning %q", msg)
	}
}

func TestSymlinksRefused(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: link}); err == nil {
		t.Fatal("a symlinked capture directory was accepted")
	}
	dir := filepath.Join(base, "cap")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, BodiesDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: dir}); err == nil {
		t.Fatal("a symlinked bodies folder was accepted")
	}

	// a planted index file link and day folder link fail the write
	dir2 := filepath.Join(base, "cap2")
	w := open(t, Options{Dir: dir2})
	target := filepath.Join(real, "stolen")
	if err := os.Symlink(target, filepath.Join(dir2, IndexName(time.Now()))); err != nil {
		t.Fatal(err)
	}
	begin(w, "rr_link", 1, nil).NoBody(UpstreamRequest, Meta{}, "")
	_ = w.Close(5 * time.Second)
	if _, err := os.Lstat(target); err == nil || !w.Disabled() {
		t.Fatalf("the index link was followed (disabled %v)", w.Disabled())
	}
	dir3 := filepath.Join(base, "cap3")
	w = open(t, Options{Dir: dir3})
	day := filepath.Join(dir3, BodiesDir, time.Now().UTC().Format("2006-01-02"))
	if err := os.Symlink(real, day); err != nil {
		t.Fatal(err)
	}
	begin(w, "rr_link", 1, nil).Whole(UpstreamRequest, Meta{}, []byte("x"))
	_ = w.Close(5 * time.Second)
	if ents, _ := os.ReadDir(real); len(ents) != 0 || !w.Disabled() {
		t.Fatalf("the day folder link was followed: %v", ents)
	}
}

func TestBeginRefusesBadIDs(t *testing.T) {
	w := open(t, Options{})
	for _, id := range []string{"", "../x", "a/b", "rr_ok\n", strings.Repeat("a", 65)} {
		if w.Begin(id, 1, nil) != nil {
			t.Errorf("Begin(%q) accepted", id)
		}
	}
	if w.Begin("rr_ok", 0, nil) != nil {
		t.Error("attempt 0 accepted")
	}
	var nilW *Writer
	r := nilW.Begin("rr_ok", 1, nil)
	r.Whole(ClientRequest, Meta{}, nil)
	r.Start(ClientResponse, Meta{}).Write([]byte("x"))
	r.Finish()
}

func TestReadArtifactRejects(t *testing.T) {
	if _, err := ReadArtifact(strings.NewReader("not gzip"), 1<<20); err == nil {
		t.Fatal("accepted non-gzip")
	}
	dir := filepath.Join(t.TempDir(), "cap")
	w := open(t, Options{Dir: dir})
	begin(w, "rr_big", 1, nil).Whole(ClientRequest, Meta{}, bytes.Repeat([]byte("z"), 200000))
	_ = w.Close(5 * time.Second)
	l := lines(t, dir)[0]
	raw, _ := os.ReadFile(filepath.Join(dir, l.Body.Path))
	if _, err := ReadArtifact(bytes.NewReader(raw), 50000); !errors.Is(err, ErrArtifactTooLarge) {
		t.Fatalf("cap: %v", err)
	}
	if _, err := ReadArtifact(bytes.NewReader(raw[:len(raw)/2]), 1<<20); err == nil {
		t.Fatal("accepted a cut artifact")
	}
}

// BenchmarkFrame measures recording one 200-byte SSE frame (redaction,
// JSON record, compression; the file write happens on the worker).
func BenchmarkFrame(b *testing.B) {
	w, err := Open(Options{Dir: filepath.Join(b.TempDir(), "cap"), MaxArtifactBytes: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(10 * time.Second)
	frame := []byte(`event: response.output_text.delta` + "\n" + `data: {"type":"response.output_text.delta","sequence_number":12,"item_id":"msg_0123","output_index":1,"content_index":0,"delta":" the quick brown fox jumps"}` + "\n\n")
	r := w.Begin("rr_bench", 1, []string{"relay-token-1", "sk-upstream-1234567890"})
	body := r.Start(UpstreamResponse, Meta{Header: http.Header{"Content-Type": {"text/event-stream"}}})
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		body.Write(frame)
	}
	body.Close("")
}

// BenchmarkOff measures the cost of the capture calls when capture is off.
func BenchmarkOff(b *testing.B) {
	var w *Writer
	frame := []byte("data: {}\n\n")
	for b.Loop() {
		r := w.Begin("rr_x", 1, nil)
		r.Start(UpstreamResponse, Meta{}).Write(frame)
		r.Finish()
	}
}

func TestReenable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cap")
	w := open(t, Options{Dir: dir})
	fail := true
	w.beforeWrite = func(string) error {
		if fail {
			return errors.New("disk full")
		}
		return nil
	}
	begin(w, "rr_re", 1, nil).NoBody(ClientRequest, Meta{}, "")
	for deadline := time.Now().Add(10 * time.Second); !w.Disabled() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if !w.Disabled() {
		t.Fatal("not disabled")
	}
	fail = false
	if !w.Reenable() || w.Disabled() {
		t.Fatal("not re-enabled")
	}
	begin(w, "rr_re", 2, nil).NoBody(ClientRequest, Meta{}, "")
	_ = w.Close(5 * time.Second)
	if ls := lines(t, dir); len(ls) != 1 || ls[0].Attempt != 2 {
		t.Fatalf("lines %+v", ls)
	}
}

// begin starts a request whose phases are flushed as soon as they are
// recorded (tests look at single phases).
func begin(w *Writer, id string, attempt int, secrets []string) *flushing {
	return &flushing{w.Begin(id, attempt, secrets)}
}

type flushing struct{ r *Request }

func (f *flushing) Whole(p Phase, m Meta, body []byte)    { f.r.Whole(p, m, body); f.r.Flush() }
func (f *flushing) NoBody(p Phase, m Meta, reason string) { f.r.NoBody(p, m, reason); f.r.Flush() }

// TestTwoJobsPerRequest: a whole request costs two writes: the request
// phases before the upstream call, the response phases at the end.
func TestTwoJobsPerRequest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cap")
	w := open(t, Options{Dir: dir})
	r := w.Begin("rr_two", 1, nil)
	r.Whole(ClientRequest, Meta{}, []byte("{}"))
	r.Whole(UpstreamRequest, Meta{}, []byte("{}"))
	r.Flush()
	up := r.Start(UpstreamResponse, Meta{Header: http.Header{"Content-Type": {"text/event-stream"}}})
	cl := r.Start(ClientResponse, Meta{Header: http.Header{"Content-Type": {"text/event-stream"}}})
	for range 100 {
		up.Write([]byte("data: {}\n\n"))
		cl.Write([]byte("data: {}\n\n"))
	}
	r.Finish()
	_ = w.Close(5 * time.Second)
	if s := w.Stats(); s.Written != 2 || s.Dropped != 0 {
		t.Fatalf("stats %+v", s)
	}
	for _, l := range lines(t, dir) {
		readArtifact(t, dir, l)
	}
}

// BenchmarkWhole measures recording a 1 MiB JSON request body: what it
// costs the request (a copy), and what the worker then spends on it
// (redaction scan, hashing, encoding, compression; file writes excluded).
func BenchmarkWhole(b *testing.B) {
	w, err := Open(Options{Dir: filepath.Join(b.TempDir(), "cap")})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(10 * time.Second)
	msg := `{"role":"user","content":"Refactor the parser so that it reports the line and column of every error it finds."},`
	body := []byte(`{"model":"gpt-5.2","input":[` + strings.Repeat(msg, (1<<20)/len(msg)) + `{}]}`)
	secrets := []string{"relay-token-1234", "sk-upstream-1234567890"}
	b.Run("request", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			r := w.Begin("rr_bench", 1, secrets)
			r.Whole(UpstreamRequest, Meta{Method: "POST"}, body)
			r.pending = nil // not written
		}
	})
	b.Run("worker", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			r := w.Begin("rr_bench", 1, secrets)
			r.Whole(UpstreamRequest, Meta{Method: "POST"}, body)
			b.StartTimer()
			r.pending[0].render()
		}
	})
}

// TestAttempts: a second upstream_request (the relay resending without
// replayed reasoning) starts attempt 2 with its own client_request.
func TestAttempts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cap")
	w := open(t, Options{Dir: dir})
	r := w.Begin("rr_retry", 1, nil)
	r.Whole(ClientRequest, Meta{Method: "POST", URL: "/v1/chat/completions"}, []byte(`{"q":1}`))
	r.Whole(UpstreamRequest, Meta{Method: "POST", URL: "https://up/v1/responses"}, []byte(`{"with":"replay"}`))
	up := r.Start(UpstreamResponse, Meta{Status: 400, Header: http.Header{"Content-Type": {"application/json"}}})
	up.Write([]byte(`{"error":{"code":"invalid_encrypted_content"}}`))
	r.Whole(UpstreamRequest, Meta{Method: "POST", URL: "https://up/v1/responses"}, []byte(`{"without":"replay"}`))
	if r.Attempt() != 2 {
		t.Fatalf("attempt %d", r.Attempt())
	}
	r.Start(UpstreamResponse, Meta{Status: 200}).Write([]byte(`{}`))
	r.Start(ClientResponse, Meta{Status: 200}).Write([]byte(`{}`))
	r.Finish()
	_ = w.Close(5 * time.Second)
	got := map[string]string{}
	for _, l := range lines(t, dir) {
		a := readArtifact(t, dir, l)
		got[fmt.Sprintf("%d/%s", l.Attempt, l.Phase)] = string(a.Body) + " " + l.Error
	}
	want := map[string]string{
		"1/client_request": `{"q":1} `, "1/upstream_request": `{"with":"replay"} `,
		"1/upstream_response": `{"error":{"code":"invalid_encrypted_content"}} retried`,
		"2/client_request":    `{"q":1} `, "2/upstream_request": `{"without":"replay"} `,
		"2/upstream_response": `{} `, "2/client_response": `{} `,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}
