package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

// replayStats counts, over requests that carried earlier assistant turns,
// how many of those turns reached the upstream with their original
// reasoning (verified by the fake), and how many replayed reasoning items
// did not belong to the conversation's turn at that place.
type replayStats struct {
	mu       sync.Mutex
	eligible int // earlier assistant turns that could have been replayed
	replayed int // of those, replayed with the right original reasoning
	wrong    int // replayed reasoning that was not the turn's own
}

func (s *replayStats) add(eligible, replayed, wrong int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eligible += eligible
	s.replayed += replayed
	s.wrong += wrong
}

func (s *replayStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rate := 0.0
	if s.eligible > 0 {
		rate = 100 * float64(s.replayed) / float64(s.eligible)
	}
	return fmt.Sprintf("replay rate %.1f%% (%d of %d earlier assistant turns), wrong replays %d", rate, s.replayed, s.eligible, s.wrong)
}

// convo drives one Cursor-like conversation through the relay and checks,
// for every request, which earlier turns came back with their reasoning.
type convo struct {
	t      *testing.T
	r      *relay
	c      openai.Client
	model  string
	tag    string
	tools  []openai.ChatCompletionToolUnionParam
	msgs   []openai.ChatCompletionMessageParamUnion
	turns  []string // upstream response id of each assistant turn, in order
	stats  *replayStats
	expect bool // whether replay is allowed here (false: expect none)
	n      int
}

func newConvo(t *testing.T, r *relay, token, tag string, stats *replayStats) *convo {
	return &convo{t: t, r: r, c: r.client(token), model: "cursor-fast", tag: tag, stats: stats, expect: true,
		tools: []openai.ChatCompletionToolUnionParam{readFileTool, grepTool}}
}

// marker returns a unique marker for the next request.
func (cv *convo) marker() string {
	cv.n++
	return fmt.Sprintf("%s-req%d", cv.tag, cv.n)
}

// say sends a user message (with an optional fake scenario token) and
// returns the assistant's answer; tool calls are answered with results in
// follow-up requests until the assistant answers in text.
func (cv *convo) say(text string, streaming bool) openai.ChatCompletionChoice {
	cv.t.Helper()
	cv.msgs = append(cv.msgs, userMsg(cv.marker()+" "+text))
	msg := cv.send(streaming)
	for len(msg.Message.ToolCalls) > 0 {
		m := cv.marker()
		for _, tc := range msg.Message.ToolCalls {
			cv.msgs = append(cv.msgs, openai.ToolMessage(m+" result of "+tc.Function.Name, tc.ID))
		}
		msg = cv.send(!streaming) // alternate JSON and SSE within a turn too
	}
	return msg
}

// send posts the conversation so far and checks the upstream request,
// found by the relay's request ID (the last attempt, after a retry).
func (cv *convo) send(streaming bool) openai.ChatCompletionChoice {
	cv.t.Helper()
	msg, id := completeWithID(cv.t, cv.c, openai.ChatCompletionNewParams{Model: cv.model, Tools: cv.tools, Messages: cv.msgs}, streaming)
	req := cv.r.upstreamRequestByID(cv.t, id)
	cv.check(req)
	cv.turns = append(cv.turns, req.ResponseID)
	cv.msgs = append(cv.msgs, msg.Message.ToParam())
	return msg
}

// completeWithID is complete that also returns the relay's request ID.
func completeWithID(t *testing.T, c openai.Client, params openai.ChatCompletionNewParams, streaming bool) (openai.ChatCompletionChoice, string) {
	t.Helper()
	var resp *http.Response
	opt := option.WithResponseInto(&resp)
	var choice openai.ChatCompletionChoice
	if !streaming {
		comp, err := c.Chat.Completions.New(ctx(t), params, opt)
		if err != nil {
			t.Fatal(err)
		}
		choice = comp.Choices[0]
	} else {
		stream := c.Chat.Completions.NewStreaming(ctx(t), params, opt)
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		choice = acc.Choices[0]
	}
	if resp == nil || resp.Header.Get("X-Relay-Request-Id") == "" {
		t.Fatal("no X-Relay-Request-Id")
	}
	return choice, resp.Header.Get("X-Relay-Request-Id")
}

// upstreamRequestByID returns the last upstream request the relay sent
// for its request id.
func (r *relay) upstreamRequestByID(t *testing.T, id string) fakeupstream.Request {
	t.Helper()
	reqs := r.fake.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Header.Get("X-Client-Request-Id") == id {
			return reqs[i]
		}
	}
	t.Fatalf("no upstream request for relay request %s", id)
	return fakeupstream.Request{}
}

// check compares the reasoning the fake verified in req with the
// conversation's earlier turns.
func (cv *convo) check(req fakeupstream.Request) {
	cv.t.Helper()
	own := map[string]int{}
	for i, id := range cv.turns {
		own[id] = i
	}
	replayed, wrong := 0, 0
	next := 0
	for _, rr := range req.Replayed {
		i, ok := own[rr.ResponseID]
		if !ok || i < next {
			wrong++
			cv.t.Errorf("%s: replayed reasoning %s from response %s is not this conversation's turn", cv.tag, rr.ID, rr.ResponseID)
			continue
		}
		next = i + 1
		replayed++
	}
	if cv.expect && replayed != len(cv.turns) {
		cv.t.Logf("%s: %d of %d earlier turns replayed", cv.tag, replayed, len(cv.turns))
	}
	if !cv.expect && replayed > 0 {
		cv.t.Errorf("%s: %d turns replayed where replay is not allowed", cv.tag, replayed)
	}
	if cv.stats != nil && cv.expect {
		cv.stats.add(len(cv.turns), replayed, wrong)
	}
}

// lastMarker finds the marker of the newest user or tool message.
func lastMarker(msgs []openai.ChatCompletionMessageParamUnion) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		var text string
		switch {
		case msgs[i].OfUser != nil:
			text = msgs[i].OfUser.Content.OfString.Value
		case msgs[i].OfTool != nil:
			text = msgs[i].OfTool.Content.OfString.Value
		default:
			continue
		}
		if f := strings.Fields(text); len(f) > 0 {
			return f[0]
		}
	}
	return ""
}

// cacheRelay starts a relay with the reasoning cache enabled.
func cacheRelay(t *testing.T, cacheExtra, relayExtra string) *relay {
	t.Helper()
	return startRelayWith(t, strings.Replace(cacheGlobal, "enabled true", "enabled true\n"+cacheExtra, 1), relayExtra)
}

// TestReplayConversations: multi-turn conversations with text, single and
// parallel tool calls, JSON and SSE mixed, keep every earlier turn's
// reasoning, and nothing else.
func TestReplayConversations(t *testing.T) {
	r := cacheRelay(t, "", "")
	stats := &replayStats{}
	for i, streaming := range []bool{false, true} {
		cv := newConvo(t, r, relayToken, fmt.Sprintf("conv%d", i), stats)
		cv.say("hello", streaming)
		cv.say("read it [[tool]]", !streaming)
		cv.say("both [[parallel_tools]]", streaming)
		cv.say("thanks", !streaming)
		cv.say("and once more", streaming)
	}
	t.Log(stats)
	if stats.eligible == 0 || stats.replayed != stats.eligible || stats.wrong != 0 {
		t.Fatalf("%v; want every earlier turn replayed and no wrong replay", stats)
	}
}

// replayTotals aggregates the replay figures over every test in which
// replay is allowed; TestMain prints them.
var replayTotals = &replayStats{}

// TestReplayAgentMode: Responses-shaped bodies (Cursor's Agent mode) with
// custom and function tools keep their reasoning too.
func TestReplayAgentMode(t *testing.T) {
	r := cacheRelay(t, "", "")
	c := r.client(relayToken)
	input := []any{map[string]any{"type": "message", "role": "developer", "content": "You are an agent."}}
	var turns []string
	for i, tag := range []string{"[[custom_tool]]", "", "[[tool]]", "", "done"} {
		streaming := i%2 == 0
		marker := fmt.Sprintf("agent-replay-%d", i)
		if i == 0 || i == 4 || tag == "[[tool]]" {
			input = append(input, map[string]any{"type": "message", "role": "user", "content": marker + " " + tag})
		}
		msg, id := completeRawWithID(t, c, agentBody(t, streaming, input), streaming)
		req := r.upstreamRequestByID(t, id)
		check := &convo{t: t, turns: turns, expect: true, tag: "agent", stats: replayTotals}
		check.check(req)
		if len(req.Replayed) != len(turns) {
			t.Errorf("request %d: %d of %d earlier turns replayed", i, len(req.Replayed), len(turns))
		}
		turns = append(turns, req.ResponseID)
		// what an agent client sends back: the answer as items
		if msg.Message.Content != "" {
			input = append(input, map[string]any{"type": "message", "role": "assistant",
				"content": []any{map[string]any{"type": "output_text", "text": msg.Message.Content}}})
		}
		for _, tc := range msg.Message.ToolCalls {
			if tc.Function.Name == "ApplyPatch" {
				input = append(input, map[string]any{"type": "custom_tool_call", "call_id": tc.ID, "name": tc.Function.Name, "input": tc.Function.Arguments})
				input = append(input, map[string]any{"type": "custom_tool_call_output", "call_id": tc.ID, "output": marker + " patched"})
			} else {
				input = append(input, map[string]any{"type": "function_call", "call_id": tc.ID, "name": tc.Function.Name, "arguments": tc.Function.Arguments})
				input = append(input, map[string]any{"type": "function_call_output", "call_id": tc.ID, "output": marker + " read"})
			}
		}
	}
}

// completeRawWithID is completeRaw that also returns the relay's request ID.
func completeRawWithID(t *testing.T, c openai.Client, body []byte, streaming bool) (openai.ChatCompletionChoice, string) {
	t.Helper()
	var resp *http.Response
	msg := completeRaw(t, c, body, streaming, option.WithResponseInto(&resp))
	if resp == nil {
		t.Fatal("no response")
	}
	return msg, resp.Header.Get("X-Relay-Request-Id")
}

// TestReplaySurvivesRestartAndReload: a conversation continues with its
// reasoning after Caddy restarts on the same ledger and after a reload.
func TestReplaySurvivesRestartAndReload(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{APIKey: upstreamKey})
	up := httptest.NewServer(fake)
	defer up.Close()
	dir := t.TempDir()
	global := strings.ReplaceAll(cacheGlobal, "{DIR}", dir)
	site := func(extra string) string {
		return strings.ReplaceAll(fmt.Sprintf(siteConfig, extra), "{UPSTREAM}", up.URL)
	}
	env := []string{"RT_UPSTREAM_KEY=" + upstreamKey, "RT_TOKEN=" + relayToken}
	opts := relaytest.Options{Global: global, Site: site(""), Env: env, Dir: dir}
	c1 := relaytest.Start(t, opts)
	r := &relay{caddy: c1, fake: fake}
	cv := newConvo(t, r, relayToken, "restart", replayTotals)
	cv.say("one", true)
	cv.say("two [[tool]]", false)
	c1.Stop()

	opts.Port = c1.Port
	c2 := relaytest.Start(t, opts)
	r.caddy = c2
	cv.c = r.client(relayToken)
	cv.say("three after restart", true)
	if err := c2.Reload(relaytest.Options{Global: global, Site: site("sse_keepalive 1s"), Env: env}); err != nil {
		t.Fatal(err)
	}
	cv.say("four after reload", false)
	cv.say("five", true)
	if last := cv.r.upstreamRequest(t, lastMarker(cv.msgs)); len(last.Replayed) != len(cv.turns)-1 {
		t.Fatalf("after restart and reload: %d of %d earlier turns replayed", len(last.Replayed), len(cv.turns)-1)
	}
}

// TestReplayNeverGuesses: regenerated turns (two different originals for
// the same visible answer), edited histories and tool calls whose
// arguments a client would re-serialize differently are never replayed;
// an interrupted stream poisons its position.
func TestReplayNeverGuesses(t *testing.T) {
	r := cacheRelay(t, "", "")
	c := r.client(relayToken)
	ask := func(msgs []openai.ChatCompletionMessageParamUnion, streaming bool) (openai.ChatCompletionChoice, fakeupstream.Request) {
		t.Helper()
		msg := complete(t, c, openai.ChatCompletionNewParams{Model: "cursor-fast", Tools: []openai.ChatCompletionToolUnionParam{readFileTool}, Messages: msgs}, streaming)
		return msg, r.upstreamRequest(t, lastMarker(msgs))
	}

	t.Run("regeneration", func(t *testing.T) {
		u1 := userMsg("regen-1 same question")
		a, _ := ask([]openai.ChatCompletionMessageParamUnion{u1}, false)
		b, _ := ask([]openai.ChatCompletionMessageParamUnion{u1}, true) // same visible answer, new reasoning
		if a.Message.Content != b.Message.Content {
			t.Fatalf("the fake should answer the same text: %q vs %q", a.Message.Content, b.Message.Content)
		}
		_, req := ask([]openai.ChatCompletionMessageParamUnion{u1, a.Message.ToParam(), userMsg("regen-2 next")}, false)
		if len(req.Replayed) != 0 {
			t.Fatalf("an ambiguous turn was replayed: %+v", req.Replayed)
		}
	})
	t.Run("edited history", func(t *testing.T) {
		u1 := userMsg("edit-1 question")
		a, _ := ask([]openai.ChatCompletionMessageParamUnion{u1}, false)
		edited := openai.AssistantMessage(a.Message.Content + " (edited)")
		_, req := ask([]openai.ChatCompletionMessageParamUnion{u1, edited, userMsg("edit-2 next")}, true)
		if len(req.Replayed) != 0 {
			t.Fatalf("an edited turn was replayed: %+v", req.Replayed)
		}
		_, req = ask([]openai.ChatCompletionMessageParamUnion{u1, a.Message.ToParam(), userMsg("edit-3 unedited")}, true)
		if len(req.Replayed) != 1 {
			t.Fatalf("the unedited turn was not replayed: %+v", req.Replayed)
		}
	})
	t.Run("unsafe numbers", func(t *testing.T) {
		for i, args := range []string{`{"n":1.0}`, `{"n":1e3}`, `{"n":9007199254740993}`, `{"n":-0}`, `{"n":1.50}`} {
			r.fake.SetScript(func(*fakeupstream.Request) fakeupstream.Scenario {
				return fakeupstream.Scenario{Kind: fakeupstream.KindTool, Text: args}
			})
			u1 := userMsg(fmt.Sprintf("unsafe-%d call", i))
			a, _ := ask([]openai.ChatCompletionMessageParamUnion{u1}, i%2 == 0)
			r.fake.SetScript(nil)
			call := a.Message.ToolCalls[0]
			_, req := ask([]openai.ChatCompletionMessageParamUnion{u1, a.Message.ToParam(),
				openai.ToolMessage(fmt.Sprintf("unsafe-%d-result", i), call.ID)}, false)
			if len(req.Replayed) != 0 {
				t.Fatalf("%s: a call with an unsafe number spelling was replayed", args)
			}
		}
		// a safe spelling is replayed
		r.fake.SetScript(func(*fakeupstream.Request) fakeupstream.Scenario {
			return fakeupstream.Scenario{Kind: fakeupstream.KindTool, Text: `{"path":"a.go","n":12,"x":0.5}`}
		})
		u1 := userMsg("numbers-ok-1 call")
		a, _ := ask([]openai.ChatCompletionMessageParamUnion{u1}, true)
		r.fake.SetScript(nil)
		_, req := ask([]openai.ChatCompletionMessageParamUnion{u1, a.Message.ToParam(),
			openai.ToolMessage("numbers-ok-1-result", a.Message.ToolCalls[0].ID)}, false)
		if len(req.Replayed) != 1 {
			t.Fatalf("a call with safe numbers was not replayed: %+v", req.Replayed)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		u1 := userMsg("cut-1 [[cut]]")
		if _, err := run(t, c, openai.ChatCompletionNewParams{Model: "cursor-fast", Tools: []openai.ChatCompletionToolUnionParam{readFileTool},
			Messages: []openai.ChatCompletionMessageParamUnion{u1}}, true); err == nil {
			t.Fatal("a cut stream succeeded")
		}
		// the client retries the same question: the new answer starts at a
		// poisoned position and is never replayed
		u1b := userMsg("cut-1 [[cut]]")
		r.fake.SetScript(func(*fakeupstream.Request) fakeupstream.Scenario {
			return fakeupstream.Scenario{Kind: fakeupstream.KindText}
		})
		a, _ := ask([]openai.ChatCompletionMessageParamUnion{u1b}, false)
		r.fake.SetScript(nil)
		_, req := ask([]openai.ChatCompletionMessageParamUnion{u1b, a.Message.ToParam(), userMsg("cut-2 next")}, false)
		if len(req.Replayed) != 0 {
			t.Fatalf("a turn from a poisoned position was replayed: %+v", req.Replayed)
		}
	})
}

// TestReplayIsolation: different relay tokens, callers, models and
// upstream keys never share reasoning.
func TestReplayIsolation(t *testing.T) {
	r := cacheRelay(t, "", "caller_header X-Caller")
	base := newConvo(t, r, relayToken, "iso", replayTotals)
	base.say("first", false)
	first := base.msgs
	other := func(name string, token, model, caller string) {
		t.Run(name, func(t *testing.T) {
			cv := newConvo(t, r, token, "iso-"+name, nil)
			cv.expect = false
			cv.model = model
			if caller != "" {
				cv.c = openai.NewClient(option.WithBaseURL(r.caddy.BaseURL+"/v1/"), option.WithAPIKey(token),
					option.WithMaxRetries(0), option.WithHeader("X-Caller", caller))
			}
			cv.msgs = append(cv.msgs, first...)
			cv.turns = []string{"(another scope's turn)"}
			cv.say("again", true)
		})
	}
	other("token", otherToken, "cursor-fast", "")
	other("model", relayToken, "gpt-5.2-codex", "")
	other("caller", relayToken, "cursor-fast", "someone-else")
	// another upstream key (a reload with a literal key the fake also
	// accepts): the same conversation starts over
	site := strings.Replace(strings.ReplaceAll(fmt.Sprintf(siteConfig, "caller_header X-Caller"), "{UPSTREAM}", r.up.URL),
		"{env.RT_UPSTREAM_KEY}", upstreamKey2, 1)
	env := []string{"RT_UPSTREAM_KEY=" + upstreamKey, "RT_TOKEN=" + relayToken}
	global := strings.Replace(cacheGlobal, "enabled true", "enabled true\n", 1)
	if err := r.caddy.Reload(relaytest.Options{Global: global, Site: site, Env: env}); err != nil {
		t.Fatal(err)
	}
	t.Run("upstream key", func(t *testing.T) {
		cv := newConvo(t, r, relayToken, "iso-key", nil)
		cv.expect = false
		cv.msgs = append(cv.msgs, first...)
		cv.turns = []string{"(another scope's turn)"}
		cv.say("again", false)
	})
	if err := r.caddy.Reload(relaytest.Options{Global: global,
		Site: strings.ReplaceAll(fmt.Sprintf(siteConfig, "caller_header X-Caller"), "{UPSTREAM}", r.up.URL), Env: env}); err != nil {
		t.Fatal(err)
	}
	// the same scope still replays
	base.say("second", true)
	if last := r.upstreamRequest(t, lastMarker(base.msgs)); len(last.Replayed) != 1 {
		t.Fatalf("the original scope lost its replay: %+v", last.Replayed)
	}
}

// TestReplayRetryWithoutReplay: when the upstream rejects replayed
// reasoning (here: the fake's key material rotated), the relay records a
// conflict for exactly those turns and resends once without replay; the
// client never sees the rejection.
func TestReplayRetryWithoutReplay(t *testing.T) {
	r := cacheRelay(t, "", "")
	cv := newConvo(t, r, relayToken, "retry", nil)
	cv.say("one", false)
	cv.say("two", true)
	r.mu.Lock()
	r.fake = fakeupstream.New(fakeupstream.Options{APIKey: upstreamKey}) // a new secret: old ciphertext fails
	r.mu.Unlock()
	cv.expect = false
	cv.say("three", false)
	reqs := r.fake.Requests()
	if len(reqs) != 2 || reqs[0].Rejected != "invalid_encrypted_content" || reqs[1].Rejected != "" || len(reqs[1].Replayed) != 0 {
		t.Fatalf("want one rejected request and one accepted resend without replay, got %d: %+v", len(reqs), reqs)
	}
	cv.turns = cv.turns[len(cv.turns)-1:] // only the newest turn can be replayed now
	cv.expect = true
	cv.say("four", true)
	st := statusJSON(t, r)
	for k, want := range map[string]float64{"cache.replay_rejections": 1, "cache.replay_resends": 1, "cache.conflicts": 2} {
		if got := field(t, st, k); got != want {
			t.Errorf("status %s = %v, want %v", k, got, want)
		}
	}
}

// TestReplayCapacityFallback: under a memory budget too small for any
// session, requests are relayed without the cache and still succeed.
func TestReplayCapacityFallback(t *testing.T) {
	r := cacheRelay(t, "max_concurrent 1\nmemory_budget 40MiB\nreplay_ceiling 1MiB\nentry_allowance 8MiB", "")
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan error, n)
	answers := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			answers[i], err = run(t, r.client(relayToken), openai.ChatCompletionNewParams{Model: "cursor-fast",
				Messages: []openai.ChatCompletionMessageParamUnion{userMsg(fmt.Sprintf("cap-%d [[slow:50ms]]", i))}}, true)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a request failed under capacity pressure: %v", err)
		}
	}
	// Continue each conversation without pressure: a first turn the cache
	// handled is replayed; one that fell back for capacity was neither
	// observed nor may ever be replayed (its position is poisoned).
	fellBack, replayed := 0, 0
	for i := range n {
		// one session at a time, and a session is released only after
		// its request's delivery has ended: wait for the previous one, so
		// that this turn does not itself fall back for capacity
		waitFor(t, "no cache session in use", func() bool {
			return field(t, statusJSON(t, r), "sessions.active") == 0
		})
		msgs := []openai.ChatCompletionMessageParamUnion{userMsg(fmt.Sprintf("cap-%d [[slow:50ms]]", i)),
			openai.AssistantMessage(answers[i]), userMsg(fmt.Sprintf("cap-%d next", i))}
		_, id := completeWithID(t, r.client(relayToken), openai.ChatCompletionNewParams{Model: "cursor-fast", Messages: msgs}, false)
		if len(r.upstreamRequestByID(t, id).Replayed) == 1 {
			replayed++
		} else {
			fellBack++
		}
	}
	t.Logf("capacity: %d of %d concurrent first turns fell back, %d were cached", fellBack, n, replayed)
	// the budget holds one session at a time: some fell back, and the
	// ones that did not were really cached
	if fellBack == 0 || replayed == 0 {
		t.Fatalf("fell back %d, cached %d: want both", fellBack, replayed)
	}
	st := statusJSON(t, r)
	bypassed := field(t, st, "cache.bypasses.capacity")
	if bypassed < 1 || field(t, st, "cache.capacity_fallbacks") < bypassed || field(t, st, "cache.poisons_by_reason.capacity") != bypassed {
		t.Fatalf("status after capacity fallbacks: %v", st["cache"])
	}
}

// TestReplayConcurrentIdentical: identical conversations at the same time
// never get each other's reasoning.
func TestReplayConcurrentIdentical(t *testing.T) {
	r := cacheRelay(t, "", "")
	stats := &replayStats{}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cv := newConvo(t, r, relayToken, "same", stats) // identical markers: identical conversations
			cv.say("hello", i%2 == 0)
			// the identical first turns conflict and are never replayed;
			// from here the conversations diverge and replay their own turns
			cv.tag = fmt.Sprintf("same-%d", i)
			cv.say("again", i%2 == 1)
			cv.say("and again", true)
		}()
	}
	wg.Wait()
	if stats.wrong != 0 || stats.replayed < 4 {
		t.Fatalf("%v: want no wrong replay and each conversation's own later turn replayed", stats)
	}
}

// TestReplayFigures prints the replay rate over every earlier assistant
// turn in the replay tests that allow replay (run it with the others:
// go test -v -run 'TestReplay' ./tests/e2e/), and the added p50 latency
// of the hit path for a 200 KB history against the same relay with the
// cache off. It asserts correctness only, never time.
func TestReplayFigures(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{APIKey: upstreamKey})
	up := httptest.NewServer(fake)
	defer up.Close()
	site := strings.ReplaceAll(fmt.Sprintf(siteConfig, "max_request_bytes 8MiB"), "{UPSTREAM}", up.URL)
	env := []string{"RT_UPSTREAM_KEY=" + upstreamKey, "RT_TOKEN=" + relayToken}
	on := &relay{fake: fake, caddy: relaytest.Start(t, relaytest.Options{Global: cacheGlobal, Site: site, Env: env})}
	off := &relay{fake: fake, caddy: relaytest.Start(t, relaytest.Options{Site: site, Env: env})}

	// a Cursor-sized conversation: 10 turns with ~10 KB of file content
	// each, which the fake echoes back (~200 KB of history in all)
	const turns = 10
	cv := newConvo(t, on, relayToken, "figures", replayTotals)
	cv.tools = nil
	file := strings.Repeat("func example() { return 42 } // a line of code in a file\n", 180)
	for i := range turns {
		cv.say(fmt.Sprintf("turn %d, here is a file:\n%s", i, file), i%2 == 0)
	}
	cv.msgs = append(cv.msgs, userMsg(cv.marker()+" final question"))
	params := openai.ChatCompletionNewParams{Model: "cursor-fast", Messages: cv.msgs}
	raw, err := json.Marshal(cv.msgs)
	if err != nil {
		t.Fatal(err)
	}
	size := len(raw)

	const rounds = 25
	var hit, plain []time.Duration
	cOn, cOff := on.client(relayToken), off.client(relayToken)
	for i := range rounds + 3 {
		start := time.Now()
		_, id := completeWithID(t, cOn, params, false)
		d1 := time.Since(start)
		if req := on.upstreamRequestByID(t, id); len(req.Replayed) != turns {
			t.Fatalf("hit path replayed %d of %d turns", len(req.Replayed), turns)
		}
		start = time.Now()
		complete(t, cOff, params, false)
		d2 := time.Since(start)
		if i >= 3 { // warm-up
			hit, plain = append(hit, d1), append(plain, d2)
		}
	}
	p50 := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	h, p := p50(hit), p50(plain)
	fmt.Printf("figures: %v\n", replayTotals)
	fmt.Printf("figures: %d KB history, %d turns replayed: hit path p50 %v vs cache off p50 %v (+%v, x%.2f), %d rounds\n",
		size/1024, turns, h.Round(10*time.Microsecond), p.Round(10*time.Microsecond), (h - p).Round(10*time.Microsecond), float64(h)/float64(p), rounds)
	if replayTotals.wrong != 0 {
		t.Fatalf("wrong replays: %v", replayTotals)
	}
}
