package reasoningcache

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
)

// cycleSizes are the history sizes of the full-cycle benchmarks: a short,
// a typical and a long Cursor conversation.
var cycleSizes = []struct {
	name  string
	bytes int
}{{"20KB", 20 << 10}, {"200KB", 200 << 10}, {"2MB", 2 << 20}}

// cycleTurns is how many earlier assistant turns every request replays.
const cycleTurns = 10

// cycleConv builds a Chat conversation of about size bytes with
// cycleTurns earlier assistant turns, every other one with two tool calls
// whose results carry most of the bytes (files read by the agent), as a
// Cursor history does. Every turn was recorded through the engine, so a
// request for the next turn replays all of them.
func cycleConv(b testing.TB, e *env, size int) *conv {
	return cycleConvIn(b, e, testScope(canonical.ShapeChat), size)
}

// cycleConvIn is cycleConv in the given scope.
func cycleConvIn(b testing.TB, e *env, scope canonical.Scope, size int) *conv {
	c := newConv(b, canonical.ShapeChat)
	c.scope = scope
	// each turn: a user line, the assistant text, tool results
	per := size / cycleTurns
	filler := func(n int, k int) string {
		const line = "func relay(w http.ResponseWriter, r *http.Request) { /* keeps the reasoning */ }\n"
		s := strings.Repeat(line, n/len(line)+1)
		return fmt.Sprintf("%d:%s", k, s[:max(0, n-8)])
	}
	for k := range cycleTurns {
		c.user(fmt.Sprintf("step %d: %s", k, filler(per/8, k)))
		tu := turn{text: fmt.Sprintf("answer %d: %s", k, filler(per/8, k)), seed: "c"}
		if k%2 == 0 {
			tu.calls = []call{
				{name: "read_file", args: fmt.Sprintf(`{"path":"caddymodule/file%d.go","start_line":1,"end_line":400}`, k)},
				{name: "grep_search", args: fmt.Sprintf(`{"query":"relay%d","include":"*.go"}`, k)},
			}
		}
		e.runTurn(c, k, tu)
		c.assistant(k, tu)
		for i := range tu.calls {
			id := fmt.Sprintf("call_%d_%d", k, i)
			body := mustJSON(b, filler(per*3/4, k))
			c.add(json.RawMessage(fmt.Sprintf(`{"role":"tool","tool_call_id":%q,"content":%s}`, id, body)),
				json.RawMessage(fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":%s}`, id, body)))
		}
	}
	c.user("now wire the new option through the handler")
	return c
}

// streamedOutcome is the recording of a realistic streamed answer: a
// reasoning item with its ciphertext (a few KB, as the upstream sends),
// a message of about 2 KB and one tool call, with the
// output_item.done copies a stream delivers beside the terminal output.
func streamedOutcome(i int) Outcome {
	cipher := strings.Repeat("gAAAAABpQ3xY", 512) // 6 KB of ciphertext
	text := fmt.Sprintf("Iteration %d. ", i) + strings.Repeat("The option is read in Provision and passed to the engine. ", 32)
	args := `{"path":"caddymodule/handler.go","old_string":"a","new_string":"b"}`
	txt, _ := json.Marshal(text)
	aj, _ := json.Marshal(args)
	out := []json.RawMessage{
		json.RawMessage(fmt.Sprintf(`{"id":"rs_cycle%d","type":"reasoning","summary":[{"type":"summary_text","text":"Planning the edit."}],"encrypted_content":"%s","status":"completed"}`, i, cipher)),
		json.RawMessage(fmt.Sprintf(`{"id":"msg_cycle%d","type":"message","status":"completed","role":"assistant","phase":"final_answer","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":%s}]}`, i, txt)),
		json.RawMessage(fmt.Sprintf(`{"id":"fc_cycle%d","type":"function_call","status":"completed","arguments":%s,"call_id":"call_cycle%d","name":"edit_file"}`, i, aj, i)),
	}
	done := make([]json.RawMessage, len(out))
	for j := range out {
		done[j] = append(json.RawMessage(nil), out[j]...)
	}
	return Outcome{
		Status: "completed", Model: "gpt-5.2-2025-12-11", Output: out, DoneItems: done,
		Sent: Sent{Content: text, ToolCalls: []ToolCall{{ID: fmt.Sprintf("call_cycle%d", i), Name: "edit_file", Arguments: args}}},
	}
}

// BenchmarkCycleHit runs one full request cycle the way the adapter does,
// on a real on-disk ledger (WAL, synchronous=FULL): Prepare (identify,
// plan with a replay of ten earlier turns, the intent commit), Complete
// with a streamed output of a new answer (checks, projection, prediction,
// the observation commit with its payload), then DeliveredQueued (the
// resolve, queued: its commit, which the adapter waits for after the
// response, shares the next iteration's intent commit or ends the
// benchmark). Each iteration commits a new observation and payload, as a
// conversation's next turn does. Run it with -cpuprofile, -blockprofile
// and -mutexprofile to see where a hit spends its time; the disk's share
// is the three commits.
func BenchmarkCycleHit(b *testing.B) {
	for _, sz := range cycleSizes {
		b.Run(sz.name, func(b *testing.B) {
			e := newEnv(b, Config{})
			c := cycleConv(b, e, sz.bytes)
			var hist int
			for _, m := range c.history {
				hist += len(m)
			}
			ctx := context.Background()
			req := c.request()
			i := 0
			var prep, comp, deliv time.Duration
			var settled []func()
			for b.Loop() {
				t0 := time.Now()
				s, err := e.eng.Prepare(ctx, req)
				t1 := time.Now()
				if err != nil {
					b.Fatal(err)
				}
				if s.Replayed() != cycleTurns {
					b.Fatalf("replayed %d, want %d (skip %q)", s.Replayed(), cycleTurns, s.Skip())
				}
				out := streamedOutcome(i)
				t2 := time.Now()
				if err := s.Complete(ctx, out); err != nil {
					b.Fatal(err)
				}
				t3 := time.Now()
				settled = append(settled, s.DeliveredQueued(ctx))
				deliv += time.Since(t3)
				prep, comp = prep+t1.Sub(t0), comp+t3.Sub(t2)
				i++
			}
			for _, wait := range settled {
				wait()
			}
			n := float64(max(1, i))
			b.ReportMetric(prep.Seconds()*1e3/n, "prepare-ms")
			b.ReportMetric(comp.Seconds()*1e3/n, "complete-ms")
			b.ReportMetric(deliv.Seconds()*1e3/n, "delivered-ms")
			b.ReportMetric(float64(hist), "history_bytes")
			st := e.store.Stats()
			b.ReportMetric(float64(st.Ops)/float64(max(1, st.Batches)), "ops/batch")
		})
	}
}

// BenchmarkCycleConcurrent runs the full cycle of BenchmarkCycleHit from
// N concurrent clients, each in its own 20 KB conversation replaying ten
// turns, on one ledger. It reports sessions/s and how many commits the
// writer carried per transaction (one fsync each): group commit must
// carry concurrent requests instead of serializing them.
func BenchmarkCycleConcurrent(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			e := newEnv(b, Config{MaxConcurrent: n, MemoryBudget: 1 << 30})
			convs := make([]*conv, n)
			for k := range convs {
				sc := testScope(canonical.ShapeChat)
				sc.Caller = fmt.Sprintf("client-%d", k) // a scope of its own
				convs[k] = cycleConvIn(b, e, sc, 20<<10)
			}
			ctx := context.Background()
			before := e.store.Stats()
			var next atomic.Int64
			var failed atomic.Value
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for k := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req := convs[k].request()
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						s, err := e.eng.Prepare(ctx, req)
						if err == nil && s.Replayed() != cycleTurns {
							err = fmt.Errorf("replayed %d, want %d (skip %q)", s.Replayed(), cycleTurns, s.Skip())
						}
						if err == nil {
							err = s.Complete(ctx, streamedOutcome(int(i)))
						}
						if err != nil {
							failed.Store(err)
							return
						}
						s.Delivered(ctx)
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if err, _ := failed.Load().(error); err != nil {
				b.Fatal(err)
			}
			st := e.store.Stats()
			ops, batches := st.Ops-before.Ops, st.Batches-before.Batches
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "sessions/s")
			b.ReportMetric(float64(ops)/float64(max(1, batches)), "commits/fsync")
		})
	}
}
