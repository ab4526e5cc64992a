package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bodylog"
)

func TestExportBundle(t *testing.T) {
	dir := record(t, filepath.Join(t.TempDir(), "cap"), "rr_json", 1, false, nil)
	data, b := exportBytes(t, dir, "rr_json", 0)
	if !b.Completeness.Replayable || len(b.Completeness.Blockers) != 0 {
		t.Fatalf("completeness %+v", b.Completeness)
	}
	r := b.Request
	if r == nil || r.Method != "POST" || r.URL != "https://api.openai.com/v1/responses" ||
		r.Headers.Get("Authorization") != "[REDACTED]" || r.Headers.Get("Openai-Organization") != "[REDACTED]" ||
		!strings.Contains(r.Body, `"input"`) || r.BodySHA256 == "" || r.Model != "gpt-5.2" {
		t.Fatalf("request %+v", r)
	}
	if len(b.Captures) != 4 || b.Captures[0].Index.Phase != bodylog.ClientRequest || b.Captures[3].Index.Phase != bodylog.ClientResponse {
		t.Fatalf("captures %d", len(b.Captures))
	}
	for _, secret := range []string{upstreamKey, clientToken, "org-CANARY", "s=CANARY"} {
		if bytes.Contains(data, []byte(secret)) {
			t.Fatalf("bundle holds %q", secret)
		}
	}
	// keys sorted at every level: the canonical form of the bundle is a fixed point
	again, _ := Canonical(b)
	if !bytes.Equal(data, again) {
		t.Fatal("encoding is not stable")
	}
	out := filepath.Join(t.TempDir(), "b.json")
	if _, err := WriteFileAtomic(out, data); err != nil {
		t.Fatal(err)
	}
	rb, err := ReadBundle(out)
	if err != nil {
		t.Fatal(err)
	}
	if rb.Request.BodySHA256 != r.BodySHA256 {
		t.Fatal("round trip")
	}
}

func TestExportStreamAndAttempts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cap")
	record(t, dir, "rr_multi", 1, true, sseFrames)
	record(t, dir, "rr_multi", 2, true, sseFrames[:2]) // no terminal event
	_, b := exportBytes(t, dir, "rr_multi", 0)
	if b.Attempt != 2 || !slices.Equal(b.Attempts, []int{1, 2}) || len(b.Captures) != 8 {
		t.Fatalf("attempt %d of %v, %d captures", b.Attempt, b.Attempts, len(b.Captures))
	}
	if b.Completeness.Replayable || !slices.Contains(b.Completeness.Blockers, "unterminated_stream:upstream_response") {
		t.Fatalf("completeness %+v", b.Completeness)
	}
	_, b = exportBytes(t, dir, "rr_multi", 1)
	if b.Attempt != 1 || !b.Completeness.Replayable {
		t.Fatalf("attempt 1: %+v", b.Completeness)
	}
	up := b.Find(1, bodylog.UpstreamResponse)
	if len(up.Frames) != 3 || up.Frames[0].Data != sseFrames[0] {
		t.Fatalf("frames %+v", up.Frames)
	}
	if _, err := Export(ExportOptions{RequestID: "rr_multi", LogsDir: dir, Attempt: 3}); err == nil {
		t.Fatal("attempt 3 exported")
	}
	if _, err := Export(ExportOptions{RequestID: "rr_none", LogsDir: dir}); err == nil {
		t.Fatal("an unknown request exported")
	}
	if _, err := Export(ExportOptions{RequestID: "../rr", LogsDir: dir}); err == nil {
		t.Fatal("a path-like request ID was accepted")
	}
}

// TestHelperExport is run as a subprocess by TestExportDeterministic.
func TestHelperExport(t *testing.T) {
	dir, out := os.Getenv("REPLAY_HELPER_DIR"), os.Getenv("REPLAY_HELPER_OUT")
	if dir == "" {
		t.Skip("helper process only")
	}
	data, _ := exportBytes(t, dir, "rr_det", 0)
	if _, err := WriteFileAtomic(out, data); err != nil {
		t.Fatal(err)
	}
}

func TestExportDeterministic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cap")
	record(t, dir, "rr_det", 1, true, sseFrames)
	record(t, dir, "rr_other", 1, false, nil)
	first, _ := exportBytes(t, dir, "rr_det", 0)
	second, _ := exportBytes(t, dir, "rr_det", 0)
	if !bytes.Equal(first, second) {
		t.Fatal("two exports differ")
	}
	for _, env := range [][]string{{"TZ=Pacific/Chatham", "GOMAXPROCS=1"}, {"TZ=America/St_Johns", "GOMAXPROCS=7"}} {
		out := filepath.Join(t.TempDir(), "b.json")
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperExport$", "-test.count=1")
		cmd.Env = append(os.Environ(), "REPLAY_HELPER_DIR="+dir, "REPLAY_HELPER_OUT="+out)
		cmd.Env = append(cmd.Env, env...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", env, err, b)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, got) {
			t.Fatalf("export under %v differs", env)
		}
	}
}

func TestExportTamper(t *testing.T) {
	cases := []struct {
		name string
		f    func(t *testing.T, dir string)
		want string // error substring; "" means a bundle with blocker
		blk  string
	}{
		{"flip a byte inside the body", func(t *testing.T, dir string) {
			rewriteArtifact(t, artifactPath(t, dir, bodylog.UpstreamRequest), func(b []byte) []byte {
				return bytes.Replace(b, []byte(`hello`), []byte(`hellO`), 1)
			})
		}, "artifact end record does not match", ""},
		{"flip a byte inside the body and its end record", func(t *testing.T, dir string) {
			p := artifactPath(t, dir, bodylog.UpstreamRequest)
			rewriteArtifact(t, p, func(b []byte) []byte {
				b = bytes.Replace(b, []byte(`hello`), []byte(`hellO`), 1)
				// recompute the end record as a careful forger would
				return forgeEnd(t, b[:bytes.LastIndex(b, []byte(`{"type":"end"`))])
			})
		}, "index field sha256 does not match", ""},
		{"flip a compressed byte", func(t *testing.T, dir string) {
			p := artifactPath(t, dir, bodylog.UpstreamResponse)
			raw, _ := os.ReadFile(p)
			raw[len(raw)/2] ^= 0x20
			os.WriteFile(p, raw, 0o600)
		}, "artifact", ""},
		{"drop an artifact", func(t *testing.T, dir string) {
			os.Remove(artifactPath(t, dir, bodylog.UpstreamRequest))
		}, "", "missing_artifact:upstream_request"},
		{"swap two artifacts", func(t *testing.T, dir string) {
			a, b := artifactPath(t, dir, bodylog.ClientRequest), artifactPath(t, dir, bodylog.UpstreamRequest)
			tmp := a + ".tmp"
			os.Rename(a, tmp)
			os.Rename(b, a)
			os.Rename(tmp, b)
		}, "artifact identity mismatch", ""},
		{"edit a header back to a secret", func(t *testing.T, dir string) {
			editIndex(t, dir, bodylog.UpstreamRequest, func(m map[string]any) {
				m["headers"].(map[string]any)["Authorization"] = []any{"Bearer " + upstreamKey}
			})
		}, "header Authorization is not redacted", ""},
		{"edit a query back to a secret", func(t *testing.T, dir string) {
			editIndex(t, dir, bodylog.ClientRequest, func(m map[string]any) {
				m["url"] = "/v1/chat/completions?api_key=" + clientToken
			})
		}, `query parameter "api_key" is not redacted`, ""},
		{"edit an index field", func(t *testing.T, dir string) {
			editIndex(t, dir, bodylog.UpstreamResponse, func(m map[string]any) { m["status"] = 201 })
		}, "index field status does not match", ""},
		{"edit the index hash", func(t *testing.T, dir string) {
			editIndex(t, dir, bodylog.UpstreamRequest, func(m map[string]any) {
				m["body"].(map[string]any)["sha256"] = strings.Repeat("0", 64)
			})
		}, "index field sha256 does not match", ""},
		{"drop the hash", func(t *testing.T, dir string) {
			editIndex(t, dir, bodylog.UpstreamRequest, func(m map[string]any) { delete(m["body"].(map[string]any), "sha256") })
		}, "", "missing_hash:upstream_request"},
		{"drop a phase", func(t *testing.T, dir string) {
			p := indexFile(t, dir)
			data, _ := os.ReadFile(p)
			var keep []string
			for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				if !strings.Contains(l, `"phase":"upstream_response"`) {
					keep = append(keep, l)
				}
			}
			os.WriteFile(p, []byte(strings.Join(keep, "\n")+"\n"), 0o600)
		}, "", "missing_phase:upstream_response"},
		{"duplicate a line", func(t *testing.T, dir string) {
			p := indexFile(t, dir)
			data, _ := os.ReadFile(p)
			os.WriteFile(p, append(data, data...), 0o600)
		}, "a second capture", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := record(t, filepath.Join(t.TempDir(), "cap"), "rr_tamper", 1, true, sseFrames)
			tc.f(t, dir)
			b, err := Export(ExportOptions{RequestID: "rr_tamper", LogsDir: dir})
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
				for _, s := range []string{upstreamKey, clientToken} {
					if strings.Contains(err.Error(), s) {
						t.Fatalf("error leaks a secret: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Completeness.Replayable || !slices.Contains(b.Completeness.Blockers, tc.blk) {
				t.Fatalf("completeness %+v, want blocker %s", b.Completeness, tc.blk)
			}
			if !slices.IsSorted(b.Completeness.Blockers) {
				t.Fatal("blockers are not sorted")
			}
			if len(b.Captures) < 3 {
				t.Fatal("a capture was dropped from the bundle")
			}
			if _, err := Compare(t.Context(), b, CompareOptions{Execute: true, URL: "http://127.0.0.1:1/v1/responses"}); err == nil ||
				!strings.Contains(err.Error(), "not replayable") {
				t.Fatalf("compare of a blocked bundle: %v", err)
			}
		})
	}
}

func TestExportTraversalAndLinks(t *testing.T) {
	for _, p := range []string{"../../etc/passwd", "/etc/passwd", "bodies/../../x.gz", "bodies/2026-01-01/../../../x.gz",
		"bodies/2026-01-01/rr_trav-1-client_request.gz", "bodies\\2026-01-01\\rr_trav-1-upstream_request.gz"} {
		dir := record(t, filepath.Join(t.TempDir(), "cap"), "rr_trav", 1, false, nil)
		editIndex(t, dir, bodylog.UpstreamRequest, func(m map[string]any) { m["body"].(map[string]any)["path"] = p })
		if _, err := Export(ExportOptions{RequestID: "rr_trav", LogsDir: dir}); err == nil || !strings.Contains(err.Error(), "path") {
			t.Errorf("path %q: err = %v", p, err)
		}
	}
	outside := t.TempDir()
	links := map[string]func(t *testing.T, dir string){
		"artifact": func(t *testing.T, dir string) {
			a := artifactPath(t, dir, bodylog.UpstreamRequest)
			os.Rename(a, filepath.Join(outside, "a.gz"))
			os.Symlink(filepath.Join(outside, "a.gz"), a)
		},
		"day folder": func(t *testing.T, dir string) {
			day := filepath.Dir(artifactPath(t, dir, bodylog.UpstreamRequest))
			os.Rename(day, filepath.Join(outside, "day"))
			os.Symlink(filepath.Join(outside, "day"), day)
		},
		"bodies folder": func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, "bodies"), filepath.Join(outside, "bodies"))
			os.Symlink(filepath.Join(outside, "bodies"), filepath.Join(dir, "bodies"))
		},
		"index file": func(t *testing.T, dir string) {
			p := indexFile(t, dir)
			os.Rename(p, filepath.Join(outside, "i.jsonl"))
			os.Symlink(filepath.Join(outside, "i.jsonl"), p)
		},
	}
	for name, f := range links {
		t.Run(name, func(t *testing.T) {
			outside = t.TempDir()
			dir := record(t, filepath.Join(t.TempDir(), "cap"), "rr_link", 1, false, nil)
			f(t, dir)
			if _, err := Export(ExportOptions{RequestID: "rr_link", LogsDir: dir}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
				t.Fatalf("err = %v", err)
			}
		})
	}
	dir := record(t, filepath.Join(t.TempDir(), "cap"), "rr_link", 1, false, nil)
	link := filepath.Join(t.TempDir(), "linkdir")
	os.Symlink(dir, link)
	if _, err := Export(ExportOptions{RequestID: "rr_link", LogsDir: link}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("a symlinked logs dir: %v", err)
	}
}

func TestExportCaps(t *testing.T) {
	dir := record(t, filepath.Join(t.TempDir(), "cap"), "rr_cap", 1, false, nil)
	a := artifactPath(t, dir, bodylog.UpstreamResponse)
	big := make([]byte, MaxArtifactCompressed+1)
	os.WriteFile(a, big, 0o600)
	if _, err := Export(ExportOptions{RequestID: "rr_cap", LogsDir: dir}); err == nil || !strings.Contains(err.Error(), "size cap") {
		t.Fatalf("compressed cap: %v", err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "b.json")
	sum, err := WriteFileAtomic(out, []byte("one\n"))
	if err != nil || len(sum) != 64 {
		t.Fatal(err)
	}
	if _, err := WriteFileAtomic(out, []byte("two\n")); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(out)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("leftovers: %v", ents)
	}
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep"), 0o600)
	link := filepath.Join(dir, "link.json")
	os.Symlink(target, link)
	if _, err := WriteFileAtomic(link, []byte("x")); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("symlink target: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatal("the link's target was overwritten")
	}
	if _, err := WriteFileAtomic(out, make([]byte, MaxBundleBytes+1)); err == nil {
		t.Fatal("oversized bundle written")
	}
}

func TestReadBundleRejectsUnredacted(t *testing.T) {
	dir := record(t, filepath.Join(t.TempDir(), "cap"), "rr_rb", 1, false, nil)
	data, _ := exportBytes(t, dir, "rr_rb", 0)
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		out, _ := json.Marshal(m)
		return out
	}
	req := func(m map[string]any) map[string]any { return m["request"].(map[string]any) }
	cases := map[string][]byte{
		"header": edit(func(m map[string]any) {
			req(m)["headers"].(map[string]any)["Authorization"] = []any{"Bearer " + upstreamKey}
		}),
		"capture header": edit(func(m map[string]any) {
			c := m["captures"].([]any)[0].(map[string]any)["index"].(map[string]any)
			c["headers"].(map[string]any)["Cookie"] = []any{"session=abc"}
		}),
		"url": edit(func(m map[string]any) { req(m)["url"] = "https://api.openai.com/v1/responses?token=abc" }),
		"body": edit(func(m map[string]any) {
			req(m)["body"] = strings.Replace(req(m)["body"].(string), "hello", "hellO", 1)
		}),
		"key in body": edit(func(m map[string]any) {
			req(m)["body"] = strings.Replace(req(m)["body"].(string), "hello", upstreamKey, 1)
		}),
		"unknown field": edit(func(m map[string]any) { m["extra"] = 1 }),
		"version":       edit(func(m map[string]any) { m["version"] = 2 }),
	}
	for name, doc := range cases {
		if bytes.Equal(doc, data) {
			t.Fatalf("%s: the edit did not apply", name)
		}
		p := filepath.Join(t.TempDir(), "b.json")
		os.WriteFile(p, doc, 0o600)
		if _, err := ReadBundle(p); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), upstreamKey) {
			t.Errorf("%s: error leaks the key", name)
		}
	}
}

// BenchmarkExport measures exporting and encoding a streamed request's
// bundle (index scan, four artifacts verified, canonical JSON).
func BenchmarkExport(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "cap")
	for i := range 50 {
		record(b, dir, fmt.Sprintf("rr_other%d", i), 1, false, nil)
	}
	frames := make([]string, 0, 400)
	for range 400 {
		frames = append(frames, sseFrames[1])
	}
	frames = append(frames, sseFrames[2])
	record(b, dir, "rr_bench", 1, true, frames)
	b.ReportAllocs()
	for b.Loop() {
		bd, err := Export(ExportOptions{RequestID: "rr_bench", LogsDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Canonical(bd); err != nil {
			b.Fatal(err)
		}
	}
}

func TestExportIgnoresOtherRequestsLines(t *testing.T) {
	dir := record(t, filepath.Join(t.TempDir(), "cap"), "rr_keep", 1, false, nil)
	p := indexFile(t, dir)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// a garbled line of another request that mentions this one, and a
	// line cut short by a crash
	f.WriteString(`{"v":1,"requestId":"rr_other","note":"rr_keep",` + "\n" + `{"v":1,"requestId":"rr_keep","att`)
	f.Close()
	if _, b := exportBytes(t, dir, "rr_keep", 0); !b.Completeness.Replayable {
		t.Fatalf("completeness %+v", b.Completeness)
	}
	f, _ = os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("\n" + `{"v":1,"requestId":"rr_keep","bogus":1}` + "\n")
	f.Close()
	if _, err := Export(ExportOptions{RequestID: "rr_keep", LogsDir: dir}); err == nil {
		t.Fatal("a garbled line of this request was ignored")
	}
}

func TestExportRetriedRequest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cap")
	w, err := bodylog.Open(bodylog.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r := w.Begin("rr_retry", 1, nil)
	r.Whole(bodylog.ClientRequest, bodylog.Meta{Method: "POST", URL: "/v1/chat/completions"}, []byte(`{"q":1}`))
	r.Whole(bodylog.UpstreamRequest, bodylog.Meta{Method: "POST", URL: TrustedEndpoint}, []byte(`{"with":"replay"}`))
	r.Start(bodylog.UpstreamResponse, bodylog.Meta{Status: 400}).Write([]byte(`{"error":{}}`))
	r.Whole(bodylog.UpstreamRequest, bodylog.Meta{Method: "POST", URL: TrustedEndpoint}, []byte(`{"without":"replay"}`))
	r.Start(bodylog.UpstreamResponse, bodylog.Meta{Status: 200}).Write([]byte(`{}`))
	r.Start(bodylog.ClientResponse, bodylog.Meta{Status: 200}).Write([]byte(`{}`))
	r.Finish()
	w.Close(5 * time.Second)

	_, b := exportBytes(t, dir, "rr_retry", 0)
	if b.Attempt != 2 || b.Request.Body != `{"without":"replay"}` || !b.Completeness.Replayable {
		t.Fatalf("attempt %d body %s %+v", b.Attempt, b.Request.Body, b.Completeness)
	}
	_, b = exportBytes(t, dir, "rr_retry", 1)
	if b.Request.Body != `{"with":"replay"}` || !b.Completeness.Replayable ||
		!slices.Contains(b.Completeness.Warnings, "missing_phase:client_response") ||
		!slices.Contains(b.Completeness.Warnings, "phase_error:upstream_response:retried") {
		t.Fatalf("attempt 1: %s %+v", b.Request.Body, b.Completeness)
	}
}
