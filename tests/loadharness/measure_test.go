package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
)

func TestClassify(t *testing.T) {
	conv := func(tag string, turns ...string) *conversation { return &conversation{tag: tag, turns: turns} }
	ix := newReplayIndex([]*conversation{conv("a-c0", "r1", "r2", "r3"), conv("a-c1", "r4", "r5", "r6")})
	rr := func(ids ...string) []fakeupstream.ReplayedReasoning {
		out := make([]fakeupstream.ReplayedReasoning, len(ids))
		for i, id := range ids {
			out[i] = fakeupstream.ReplayedReasoning{ID: "rs_" + id, ResponseID: id}
		}
		return out
	}
	for _, tc := range []struct {
		name, text string
		replayed   []fakeupstream.ReplayedReasoning
		want       verdict
	}{
		{"every turn", "a-c0 final question", rr("r1", "r2", "r3"), replayHit},
		{"every turn, other conversation", "a-c1 final question", rr("r4", "r5", "r6"), replayHit},
		{"nothing", "a-c0 final question", nil, replayNone},
		{"a prefix", "a-c0 final question", rr("r1", "r2"), replayPartial},
		{"with a gap", "a-c0 final question", rr("r1", "r3"), replayPartial},
		{"another conversation's turns", "a-c0 final question", rr("r4", "r5", "r6"), replayWrong},
		{"one foreign turn", "a-c0 final question", rr("r1", "r5", "r3"), replayWrong},
		{"out of order", "a-c0 final question", rr("r2", "r1", "r3"), replayWrong},
		{"twice", "a-c0 final question", rr("r1", "r1", "r2"), replayWrong},
		{"unknown tag with reasoning", "b-c0 final question", rr("r1"), replayWrong},
		{"unknown tag without", "b-c0 final question", nil, replayNone},
		{"the tag alone", "a-c0", rr("r1", "r2", "r3"), replayHit},
	} {
		if got := ix.classify(tc.text, tc.replayed); got != tc.want {
			t.Errorf("%s: classify = %d, want %d", tc.name, got, tc.want)
		}
	}

	var tally replayTally
	for _, v := range []verdict{replayHit, replayHit, replayPartial, replayNone, replayWrong} {
		tally.add(http.StatusOK, v)
	}
	tally.add(http.StatusBadRequest, replayHit)
	want := replayTally{Upstream: 5, Hits: 2, Partial: 1, Wrong: 1, Rejected: 1}
	if tally != want {
		t.Errorf("tally = %+v, want %+v", tally, want)
	}
	tally.merge(want)
	if tally.Hits != 4 || tally.Upstream != 10 || tally.Rejected != 2 {
		t.Errorf("merged tally = %+v", tally)
	}
	if p := replayPercent(3, 4); p != 75 {
		t.Errorf("replayPercent(3, 4) = %v", p)
	}
	if p := replayPercent(0, 0); p != 0 {
		t.Errorf("replayPercent(0, 0) = %v", p)
	}
}

// TestTallyFake counts replays the way the harness does, from what a real
// fake upstream verified: a conversation's turn, its reasoning sent back,
// a forged ciphertext and a foreign conversation's reasoning.
func TestTallyFake(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{APIKey: upstreamKey})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	post := func(body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/responses", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+upstreamKey)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	request := func(input string) string {
		return `{"model":"gpt-5.2","store":false,"include":["reasoning.encrypted_content"],"input":[` + input + `]}`
	}
	user := func(s string) string { return `{"role":"user","content":` + quoteJSON(s) + `}` }

	// turn one of conversation t-c0, and of t-c1
	turn := func(tag string) (respID, item string) {
		st, b := post(request(user(tag + " first")))
		if st != http.StatusOK {
			t.Fatalf("first turn: %d %s", st, b)
		}
		var r struct {
			ID     string           `json:"id"`
			Output []map[string]any `json:"output"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		for _, o := range r.Output {
			if o["type"] == "reasoning" {
				it, _ := json.Marshal(map[string]any{"type": "reasoning", "id": o["id"], "summary": []any{}, "encrypted_content": o["encrypted_content"]})
				return r.ID, string(it)
			}
		}
		t.Fatalf("first turn without reasoning: %s", b)
		return "", ""
	}
	id0, item0 := turn("t-c0")
	id1, item1 := turn("t-c1")
	ix := newReplayIndex([]*conversation{{tag: "t-c0", turns: []string{id0}}, {tag: "t-c1", turns: []string{id1}}})
	fake.Reset()

	post(request(user("t-c0 first") + "," + item0 + "," + user("t-c0 second")))                // hit
	post(request(user("t-c0 first") + "," + user("t-c0 second")))                              // no replay
	post(request(user("t-c0 first") + "," + item1 + "," + user("t-c0 second")))                // t-c1's reasoning
	post(request(user("t-c0 first") + "," + strings.Replace(item0, `"rs_`, `"rs_x`, 1) + "," + // forged id
		user("t-c0 second")))
	got := tallyFake(fake, ix)
	want := replayTally{Upstream: 3, Hits: 1, Wrong: 1, Rejected: 1}
	if got != want {
		t.Fatalf("tally = %+v, want %+v", got, want)
	}
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestParseMemStatus(t *testing.T) {
	status := "Name:\tcaddy\nVmPeak:\t 2000000 kB\nVmHWM:\t  458752 kB\nVmRSS:\t  174080 kB\nThreads:\t12\n"
	m, err := parseMemStatus(strings.NewReader(status))
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS != 170<<20 || m.Peak != 448<<20 {
		t.Fatalf("parseMemStatus = %+v", m)
	}
	if mib(m.Peak) != "448.0 MiB" {
		t.Errorf("mib = %q", mib(m.Peak))
	}
	for _, bad := range []string{
		"VmRSS:\t1 kB\n",                 // no VmHWM
		"VmHWM:\t1 kB\n",                 // no VmRSS
		"VmHWM:\t1 MB\nVmRSS:\t1 kB\n",   // another unit
		"VmHWM:\tx kB\nVmRSS:\t1 kB\n",   // not a number
		"VmHWM:\t-1 kB\nVmRSS:\t1 kB\n",  // negative
		"VmHWM:\t1 2 kB\nVmRSS:\t1 kB\n", // extra field
		"",                               // empty
	} {
		if _, err := parseMemStatus(strings.NewReader(bad)); err == nil {
			t.Errorf("parseMemStatus(%q) accepted", bad)
		}
	}
}

// TestPrintTable pins the table's format: its header, one row per cell
// with the ratios, the added milliseconds and the replay share, and a note
// for a cell whose relay did not always replay.
func TestPrintTable(t *testing.T) {
	cells := []cellResult{
		{Size: "20KB", Cache: false, Workload: "json", Concurrency: 1,
			Relay:    stats{Requests: 100, ReqPerS: 400, P50: 2500 * time.Microsecond, P99: 4 * time.Millisecond},
			Baseline: stats{Requests: 120, ReqPerS: 500, P50: 2 * time.Millisecond, P99: 3 * time.Millisecond},
			Replay:   replayTally{Upstream: 100}},
		{Size: "2MB", Cache: true, Workload: "sse", Concurrency: 8,
			Relay:    stats{Requests: 50, ReqPerS: 10, P50: 40 * time.Millisecond, P99: 90 * time.Millisecond, Errors: 1, FirstErr: "status 503"},
			Baseline: stats{Requests: 80, ReqPerS: 40, P50: 10 * time.Millisecond, P99: 20 * time.Millisecond},
			Replay:   replayTally{Upstream: 50, Hits: 23, Partial: 2}},
	}
	var out bytes.Buffer
	if err := printTable(&out, cells); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	t.Logf("\n%s", text)
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want header, two rows and two notes", len(lines))
	}
	header := regexp.MustCompile(`^\s*size\s+cache\s+workload\s+conc\s+relay n\s+req/s\s+p50\s+p99\s+err\s+proxy n\s+req/s\s+p50\s+p99\s+err\s+p50 ratio\s+added p50\s+req/s ratio\s+replay\s*$`)
	if !header.MatchString(lines[0]) {
		t.Errorf("header %q", lines[0])
	}
	rows := []*regexp.Regexp{
		regexp.MustCompile(`^\s*20KB\s+off\s+json\s+1\s+100\s+400\.0\s+2\.500ms\s+4\.000ms\s+0\s+120\s+500\.0\s+2\.000ms\s+3\.000ms\s+0\s+1\.25x\s+\+0\.500ms\s+0\.80x\s+0\.0%\s*$`),
		regexp.MustCompile(`^\s*2MB\s+on\s+sse\s+8\s+50\s+10\.0\s+40\.000ms\s+90\.000ms\s+1\s+80\s+40\.0\s+10\.000ms\s+20\.000ms\s+0\s+4\.00x\s+\+30\.000ms\s+0\.25x\s+46\.0%\s*$`),
	}
	for i, re := range rows {
		if !re.MatchString(lines[1+i]) {
			t.Errorf("row %d: %q", i+1, lines[1+i])
		}
	}
	if lines[3] != "2MB cache on sse c=8 relay: 1 errors, first: status 503" {
		t.Errorf("error note %q", lines[3])
	}
	if lines[4] != "2MB cache on sse c=8: of 50 upstream requests 23 replayed every earlier turn, 2 some, 0 reasoning not their own; the fake rejected 0" {
		t.Errorf("replay note %q", lines[4])
	}
	if signedMS(-1500*time.Microsecond) != "-1.500ms" {
		t.Errorf("signedMS = %q", signedMS(-1500*time.Microsecond))
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"20KB": 20_000, "2MB": 2_000_000, "1MiB": 1 << 20, "64KiB": 64 << 10, "300": 300, "300B": 300, " 5 KB": 5000} {
		got, err := parseSize(in)
		if err != nil || got.bytes != want || got.label != strings.TrimSpace(in) {
			t.Errorf("parseSize(%q) = %+v, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "KB", "-1KB", "0", "1GB", "1.5MB", "65MiB"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
}

// TestConversationParts: the tool results and the history grow with the
// requested size, so the final request is about that size.
func TestConversationParts(t *testing.T) {
	for _, n := range []int{300, 4000, 400_000} {
		c := fileContent("x-c0", 3, n)
		if len(c) < n || len(c) > n+200 || !strings.HasPrefix(c, "// x-c0: internal/service/file3.go\n") {
			t.Errorf("fileContent(%d) is %d bytes", n, len(c))
		}
	}
	if fileContent("a", 1, 1000) == fileContent("b", 1, 1000) {
		t.Error("two conversations read the same file content")
	}
}

func TestTrimPprofHeader(t *testing.T) {
	in := "Ignore expression matched no samples\nFile: caddy\nBuild ID: abc\nType: cpu\nTime: 2026-12-03\nDuration: 5s\n      flat  flat%\n"
	if got := trimPprofHeader(in); got != "Type: cpu\nDuration: 5s\n      flat  flat%" {
		t.Errorf("trimPprofHeader = %q", got)
	}
}

func TestResultsFailed(t *testing.T) {
	ok := func() *results {
		return &results{
			Cells:    []cellResult{{Relay: stats{Requests: 3}, Baseline: stats{Requests: 3}, Replay: replayTally{Upstream: 3, Hits: 2}}},
			Burst:    &burstResult{OK: 4, Profile: &profileResult{Name: "burst"}},
			Profiles: []profileResult{{Name: "20KB"}},
		}
	}
	if ok().failed() {
		t.Fatal("a clean run failed")
	}
	for name, spoil := range map[string]func(*results){
		"relay error":         func(r *results) { r.Cells[0].Relay.Errors = 1 },
		"baseline error":      func(r *results) { r.Cells[0].Baseline.Errors = 1 },
		"wrong replay":        func(r *results) { r.Cells[0].Replay.Wrong = 1 },
		"burst error":         func(r *results) { r.Burst.Errors = 1 },
		"burst wrong replay":  func(r *results) { r.Burst.Replay.Wrong = 1 },
		"size profile failed": func(r *results) { r.Profiles[0].Err = "x" },
		"burst profile":       func(r *results) { r.Burst.Profile.Err = "x" },
	} {
		r := ok()
		spoil(r)
		if !r.failed() {
			t.Errorf("%s: not a failure", name)
		}
	}
	// partial replays and fallbacks are figures, not failures
	r := ok()
	r.Cells[0].Replay.Partial = 1
	if r.failed() {
		t.Error("a partial replay failed the run")
	}
}
