package translate

import (
	"bufio"
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func TestGoldenRequests(t *testing.T) {
	ins, _ := filepath.Glob("testdata/requests/*.in.json")
	if len(ins) == 0 {
		t.Fatal("no request goldens")
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in.json")
		t.Run(name, func(t *testing.T) {
			req, aerr := Translate(readFile(t, in), testConfig())
			if aerr != nil {
				t.Fatalf("Translate: %v", aerr)
			}
			body, err := req.Body()
			if err != nil {
				t.Fatalf("Body: %v", err)
			}
			golden(t, strings.TrimSuffix(in, ".in.json")+".want.json", body, true)
		})
	}
}

// sseEvent is one upstream event read from a fixture.
type sseEvent struct {
	name string
	data []byte
}

// parseSSE reads an SSE fixture: "event:" and "data:" lines, records
// separated by blank lines.
func parseSSE(t testing.TB, b []byte) []sseEvent {
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	flush := func() {
		if cur.name != "" || cur.data != nil {
			out = append(out, cur)
		}
		cur = sseEvent{}
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "event:"):
			cur.name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			cur.data = append(cur.data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		}
	}
	flush()
	return out
}

// runStream feeds events to a Stream the way the handler does and returns
// the client bytes.
func runStream(t testing.TB, opts ChatOptions, events []sseEvent) ([]byte, *Stream) {
	s := NewStream(opts)
	var out []byte
	for _, ev := range events {
		var res Result
		var err error
		out, res, err = s.Event(out, ev.name, ev.data)
		if err != nil {
			return s.Fail(out, badUpstream(err.Error())), s
		}
		if res.Terminal {
			return s.Finish(out), s
		}
	}
	return s.Finish(out), s
}

var streamOpts = ChatOptions{ID: "chatcmpl-fallback", Created: 1, Model: "fallback-model", IncludeUsage: true}

func TestGoldenStreams(t *testing.T) {
	ins, _ := filepath.Glob("testdata/streams/*.sse")
	if len(ins) == 0 {
		t.Fatal("no stream goldens")
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".sse")
		t.Run(name, func(t *testing.T) {
			opts := streamOpts
			if strings.HasSuffix(name, "_nousage") {
				opts.IncludeUsage = false
			}
			out, _ := runStream(t, opts, parseSSE(t, readFile(t, in)))
			checkFrames(t, out)
			golden(t, strings.TrimSuffix(in, ".sse")+".chunks", out, false)
		})
	}
}

func TestGoldenCompletions(t *testing.T) {
	ins, _ := filepath.Glob("testdata/completions/*.in.json")
	if len(ins) == 0 {
		t.Fatal("no completion goldens")
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in.json")
		t.Run(name, func(t *testing.T) {
			got, aerr := ChatCompletion(readFile(t, in), streamOpts)
			if aerr != nil {
				got = aerr.JSON()
			}
			golden(t, strings.TrimSuffix(in, ".in.json")+".want.json", got, true)
		})
	}
}
