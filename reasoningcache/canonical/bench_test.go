package canonical

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// benchSizes are the history sizes the issue asks for.
var benchSizes = []struct {
	name string
	size int
}{{"200KB", 200 << 10}, {"2MB", 2 << 20}}

// marshal encodes v the way a JavaScript client does (no HTML escaping).
func marshal(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return json.RawMessage(bytes.TrimSpace(buf.Bytes()))
}

var codeWords = []string{"const", "let", "return", "if", "await", "async", "function", "export", "import",
	"from", "props", "state", "useEffect", "=>", "{", "}", "(", ")", "\"react\"", "'./utils'", "===", "null",
	"items.map", "setState", "fetchData", "error", "throw new Error(\"boom\")", "\tvalue", "path\\to"}

// nonASCIIWords appear in one word in 200: comments and strings in other
// languages, emoji in UI text.
var nonASCIIWords = []string{"// résumé", "\"😀\"", "// 修正", "'Größe'"}

// fakeFile is TypeScript-looking source: quotes, tabs, backslashes,
// newlines and a little non-ASCII, as tool outputs carry. About one byte
// in 25 is escaped in JSON.
func fakeFile(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		indent := rng.IntN(4)
		b.WriteString(strings.Repeat("  ", indent))
		for w := 3 + rng.IntN(8); w > 0; w-- {
			if rng.IntN(200) == 0 {
				b.WriteString(nonASCIIWords[rng.IntN(len(nonASCIIWords))])
			} else {
				b.WriteString(codeWords[rng.IntN(len(codeWords))])
			}
			b.WriteByte(' ')
		}
		b.WriteString(";\n")
	}
	return b.String()
}

// cursorHistory builds a Cursor Agent-mode (Responses-shaped) history of
// about size bytes: a long developer prompt, then repeated turns of user
// text, assistant text, function calls with JSON arguments, large file
// outputs and ApplyPatch custom tool calls.
func cursorHistory(shape Shape, size int) []json.RawMessage {
	rng := rand.New(rand.NewPCG(7, uint64(size)))
	var envs []json.RawMessage
	total := 0
	add := func(m json.RawMessage) {
		envs = append(envs, m)
		total += len(m)
	}
	prompt := fakeFile(rng, 6000)
	if shape == ShapeChat {
		add(marshal(map[string]any{"role": "system", "content": prompt}))
	} else {
		add(marshal(map[string]any{"role": "developer", "content": prompt}))
	}
	for turn := 0; total < size; turn++ {
		ask := fmt.Sprintf("Please fix the failing test in src/component%d.tsx and explain the change.", turn)
		path := fmt.Sprintf("src/component%d.tsx", turn)
		args := string(marshal(map[string]any{"path": path, "start_line": 1, "end_line": 400}))
		file := fakeFile(rng, 2000+rng.IntN(6000))
		patch := "*** Begin Patch\n*** Update File: " + path + "\n@@\n-" + fakeFile(rng, 300) + "+" + fakeFile(rng, 300) + "*** End Patch"
		say := "I'll read the file first. " + fakeFile(rng, 200)
		callID := fmt.Sprintf("call_%08d", turn)
		patchID := fmt.Sprintf("call_p%07d", turn)
		if shape == ShapeChat {
			add(marshal(map[string]any{"role": "user", "content": ask}))
			add(marshal(map[string]any{"role": "assistant", "content": say, "tool_calls": []any{
				map[string]any{"id": callID, "type": "function", "function": map[string]any{"name": "read_file", "arguments": args}},
				map[string]any{"id": patchID, "type": "function", "function": map[string]any{"name": "ApplyPatch", "arguments": patch}},
			}}))
			add(marshal(map[string]any{"role": "tool", "tool_call_id": callID, "content": file}))
			add(marshal(map[string]any{"role": "tool", "tool_call_id": patchID, "content": "Done"}))
			add(marshal(map[string]any{"role": "assistant", "content": "Fixed: " + fakeFile(rng, 300)}))
			continue
		}
		add(marshal(map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": ask}}}))
		add(marshal(map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": say}}}))
		add(marshal(map[string]any{"type": "function_call", "call_id": callID, "name": "read_file", "arguments": args}))
		add(marshal(map[string]any{"type": "custom_tool_call", "call_id": patchID, "name": "ApplyPatch", "input": patch}))
		add(marshal(map[string]any{"type": "function_call_output", "call_id": callID, "output": file}))
		add(marshal(map[string]any{"type": "custom_tool_call_output", "call_id": patchID, "output": "Done"}))
		add(marshal(map[string]any{"role": "assistant", "content": "Fixed: " + fakeFile(rng, 300)}))
	}
	return envs
}

func historyBytes(envs []json.RawMessage) int64 {
	var n int64
	for _, e := range envs {
		n += int64(len(e))
	}
	return n
}

// BenchmarkPrefixDigests measures HistoryDigests over realistic Cursor
// histories; MB/s counts raw envelope bytes.
func BenchmarkPrefixDigests(b *testing.B) {
	for _, shape := range []Shape{ShapeResponses, ShapeChat} {
		for _, sz := range benchSizes {
			envs := cursorHistory(shape, sz.size)
			scope := testScope(shape)
			b.Run(shape.String()+"/"+sz.name, func(b *testing.B) {
				b.SetBytes(historyBytes(envs))
				b.ReportAllocs()
				defer reportCPU(b, historyBytes(envs))()
				for b.Loop() {
					d, err := HistoryDigests(testSecret, scope, envs, Limits{})
					if err != nil || d.Refusal != nil {
						b.Fatal(err, d.Refusal)
					}
				}
			})
		}
	}
}

// BenchmarkSHA256Baseline hashes the same number of bytes with plain
// SHA-256, the ceiling for BenchmarkPrefixDigests.
func BenchmarkSHA256Baseline(b *testing.B) {
	for _, shape := range []Shape{ShapeResponses, ShapeChat} {
		for _, sz := range benchSizes {
			buf := bytes.Join(bytesOf(cursorHistory(shape, sz.size)), nil)
			b.Run(shape.String()+"/"+sz.name, func(b *testing.B) {
				b.SetBytes(int64(len(buf)))
				b.ReportAllocs()
				defer reportCPU(b, int64(len(buf)))()
				for b.Loop() {
					sha256.Sum256(buf)
				}
			})
		}
	}
}

// reportCPU pins the benchmark to its OS thread and, when the returned
// function runs, reports throughput per CPU second of that thread
// ("cpuMB/s") next to the wall-clock MB/s, which swings with the load of a
// shared machine.
func reportCPU(b *testing.B, bytesPerOp int64) func() {
	runtime.LockOSThread()
	t0 := threadCPU()
	return func() {
		if cpu := threadCPU() - t0; cpu > 0 {
			b.ReportMetric(float64(b.N)*float64(bytesPerOp)/cpu.Seconds()/1e6, "cpuMB/s")
		}
		runtime.UnlockOSThread()
	}
}

// The number of allocations of a pass does not grow with the history's
// byte size (only with its message and block count).
func TestAllocationsFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation measurement")
	}
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: allocation counts vary")
	}
	small := cursorHistory(ShapeResponses, 200<<10)
	// Same messages, ten times the bytes in every tool output.
	large := make([]json.RawMessage, len(small))
	for i, e := range small {
		var m map[string]any
		if err := json.Unmarshal(e, &m); err != nil {
			t.Fatal(err)
		}
		if out, ok := m["output"].(string); ok {
			m["output"] = strings.Repeat(out, 10)
		}
		large[i] = marshal(m)
	}
	scope := testScope(ShapeResponses)
	run := func(envs []json.RawMessage) float64 {
		HistoryDigests(testSecret, scope, envs, Limits{}) // warm the pool
		return testing.AllocsPerRun(5, func() {
			if _, err := HistoryDigests(testSecret, scope, envs, Limits{}); err != nil {
				t.Fatal(err)
			}
		})
	}
	a, b := run(small), run(large)
	t.Logf("allocations: %d bytes -> %.0f, %d bytes -> %.0f", historyBytes(small), a, historyBytes(large), b)
	if b > a+2 {
		t.Errorf("allocations grow with history bytes: %.0f -> %.0f", a, b)
	}
}
