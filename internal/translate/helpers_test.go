package translate

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files that do not exist yet")

// testConfig is the configuration every translation test uses.
func testConfig() *Config {
	return &Config{
		Aliases: map[string]Alias{
			"gpt-5.2": {Model: "gpt-5.2", Effort: "medium", Summary: "auto"},
			"fast":    {Model: "gpt-4.1", NoReasoning: true},
			"terse":   {Model: "gpt-5.2-codex", Verbosity: "low"},
			"plain":   {Model: "gpt-4o", NoReasoning: true, Summary: "concise"},
		},
		DefaultEffort: "low",
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return b
}

// compact returns b without insignificant whitespace.
func compact(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("compact: %v\n%s", err, b)
	}
	return out.Bytes()
}

// golden compares got with the golden file path (compacted JSON when
// isJSON). With -update a missing golden file is written instead.
func golden(t *testing.T, path string, got []byte, isJSON bool) {
	t.Helper()
	want, err := os.ReadFile(path)
	if os.IsNotExist(err) && *update {
		out := got
		if isJSON {
			var buf bytes.Buffer
			if err := json.Indent(&buf, got, "", " "); err != nil {
				t.Fatal(err)
			}
			out = append(buf.Bytes(), '\n')
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatalf("read golden: %v", err)
	}
	if isJSON {
		want, got = compact(t, want), compact(t, got)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s mismatch\n got: %s\nwant: %s", filepath.Base(path), got, want)
	}
}
