package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

// fleetRelays is the number of relays behind the front.
const fleetRelays = 3

// fleetSite is a relay of the fleet; every relay accepts every token.
const fleetSite = `reasoning_relay {
	upstream {UPSTREAM}/v1
	api_key {env.RT_UPSTREAM_KEY}
	relay_token %s
	model_alias cursor-fast gpt-5.2 effort low summary auto verbosity low
	sse_keepalive 100ms
}`

// fleetCache is every relay's reasoning_cache: room for all the test's
// conversations at once on one relay (up to 18 when the restarted relay
// takes its old and new ones back), each possibly still holding its
// previous request's session for a moment, so that no turn is relayed
// without the cache for capacity.
const fleetCache = `	reasoning_cache {
		database {DIR}/data/ledger.sqlite
		enabled true
		max_concurrent 48
		memory_budget 256MiB
		entry_allowance 1MiB
	}`

// fleetFront is the front Caddy, as in the README's fleet example, with
// shorter intervals for the test and a header that tells the test which
// relay answered.
const fleetFront = `reverse_proxy %s {
	lb_policy header Authorization
	lb_retries 2
	health_uri /v1/health
	health_interval 250ms
	health_timeout 2s
	fail_duration 2s
	max_fails 1
	header_down X-Fleet-Relay {http.reverse_proxy.upstream.port}
}`

// fleet is a front Caddy load balancing over relays that each own a
// ledger, all in front of one fake upstream.
type fleet struct {
	fake   *fakeupstream.Server
	relays [fleetRelays]*relaytest.Caddy
	opts   [fleetRelays]relaytest.Options
	front  *relaytest.Caddy
	index  map[string]int // relay port -> relay index
}

func startFleet(t *testing.T, tokens []string) *fleet {
	f := &fleet{fake: fakeupstream.New(fakeupstream.Options{APIKey: upstreamKey}), index: map[string]int{}}
	up := httptest.NewServer(f.fake)
	t.Cleanup(up.Close)
	site := strings.ReplaceAll(fmt.Sprintf(fleetSite, strings.Join(tokens, " ")), "{UPSTREAM}", up.URL)
	var addrs []string
	for i := range f.relays {
		f.opts[i] = relaytest.Options{Global: fleetCache, Site: site, Env: []string{"RT_UPSTREAM_KEY=" + upstreamKey}}
		f.relays[i] = relaytest.Start(t, f.opts[i])
		f.opts[i].Dir, f.opts[i].Port = f.relays[i].Dir, f.relays[i].Port
		f.index[strconv.Itoa(f.relays[i].Port)] = i
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", f.relays[i].Port))
	}
	f.front = relaytest.Start(t, relaytest.Options{Site: fmt.Sprintf(fleetFront, strings.Join(addrs, " "))})
	return f
}

// client returns an OpenAI client that talks to the front with token.
func (f *fleet) client(token string) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(f.front.BaseURL+"/v1/"),
		option.WithAPIKey(token),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(60*time.Second),
	)
}

// fleetConvo is one conversation through the front, under one token.
type fleetConvo struct {
	token, tag string
	msgs       []openai.ChatCompletionMessageParamUnion
	turns      []string // upstream response id of each assistant turn the client received
	n          int      // requests sent
	home       int      // relay that answered the first turn
}

// turnResult is what one request of a conversation showed.
type turnResult struct {
	relay    int    // relay that answered; -1 when the request failed
	eligible int    // earlier assistant turns
	replayed int    // of those, replayed with the conversation's own reasoning
	wrong    int    // replayed reasoning from outside the conversation's branch
	id       string // the relay's request id
	err      error
}

// nextMarker is the marker of the conversation's next request.
func (cv *fleetConvo) nextMarker() string { return fmt.Sprintf("%s-m%d", cv.tag, cv.n+1) }

// turn sends a user message with the conversation so far. On success the
// message and the answer join the conversation, and the upstream request
// is checked against the conversation's own turns; on failure the
// conversation is left as it was, as a user would resend.
func (f *fleet) turn(ctx context.Context, cv *fleetConvo, extra string, streaming bool) turnResult {
	cv.n++
	user := userMsg(strings.TrimSpace(fmt.Sprintf("%s-m%d %s", cv.tag, cv.n, extra)))
	params := openai.ChatCompletionNewParams{Model: "cursor-fast", Messages: append(append([]openai.ChatCompletionMessageParamUnion(nil), cv.msgs...), user)}
	c := f.client(cv.token)
	var resp *http.Response
	var msg openai.ChatCompletionMessage
	var err error
	if streaming {
		s := c.Chat.Completions.NewStreaming(ctx, params, option.WithResponseInto(&resp))
		var acc openai.ChatCompletionAccumulator
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		err = s.Err()
		if err == nil && len(acc.Choices) == 0 {
			err = fmt.Errorf("stream without choices")
		}
		if err == nil {
			msg = acc.Choices[0].Message
		}
	} else {
		var comp *openai.ChatCompletion
		comp, err = c.Chat.Completions.New(ctx, params, option.WithResponseInto(&resp))
		if err == nil {
			msg = comp.Choices[0].Message
		}
	}
	if err != nil {
		return turnResult{relay: -1, err: err}
	}
	res := turnResult{relay: -1, eligible: len(cv.turns), id: resp.Header.Get("X-Relay-Request-Id")}
	if i, ok := f.index[resp.Header.Get("X-Fleet-Relay")]; ok {
		res.relay = i
	}
	var req *fakeupstream.Request
	reqs := f.fake.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Header.Get("X-Client-Request-Id") == resp.Header.Get("X-Relay-Request-Id") {
			req = &reqs[i]
			break
		}
	}
	if req == nil {
		return turnResult{relay: res.relay, err: fmt.Errorf("no upstream request for relay request %q", resp.Header.Get("X-Relay-Request-Id"))}
	}
	own := map[string]int{}
	for i, id := range cv.turns {
		own[id] = i
	}
	next := 0
	for _, rr := range req.Replayed {
		i, ok := own[rr.ResponseID]
		if !ok || i < next {
			res.wrong++
			continue
		}
		next = i + 1
		res.replayed++
	}
	cv.msgs = append(cv.msgs, user, msg.ToParam())
	cv.turns = append(cv.turns, req.ResponseID)
	return res
}

// fleetStats sums turn results.
type fleetStats struct {
	mu                        sync.Mutex
	requests, failed          int
	eligible, replayed, wrong int
	misses                    []string // requests that did not replay every earlier turn
}

func (s *fleetStats) add(r turnResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.err == nil && r.replayed < r.eligible {
		s.misses = append(s.misses, fmt.Sprintf("%s on relay %d: %d of %d", r.id, r.relay, r.replayed, r.eligible))
	}
	s.requests++
	if r.err != nil {
		s.failed++
	}
	s.eligible += r.eligible
	s.replayed += r.replayed
	s.wrong += r.wrong
}

func (s *fleetStats) rate() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.eligible == 0 {
		return 0
	}
	return float64(s.replayed) / float64(s.eligible)
}

func (s *fleetStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rate := 0.0
	if s.eligible > 0 {
		rate = 100 * float64(s.replayed) / float64(s.eligible)
	}
	return fmt.Sprintf("%d requests (%d failed), replay rate %.1f%% (%d of %d earlier turns), wrong replays %d",
		s.requests, s.failed, rate, s.replayed, s.eligible, s.wrong)
}

// eachConvo runs fn for every conversation at once and waits for all.
func eachConvo(convos []*fleetConvo, fn func(cv *fleetConvo)) {
	var wg sync.WaitGroup
	for _, cv := range convos {
		wg.Go(func() { fn(cv) })
	}
	wg.Wait()
}

// TestFleet: three relays, each with its own ledger, behind a front Caddy
// that routes by Authorization (rendezvous hashing), with active and
// passive health checks and retries for requests that never reached a
// relay. One relay is killed with SIGKILL while streams run on it:
//   - conversations on the other relays keep replaying (rate >= 0.99);
//   - the killed relay's conversations go on through the other relays as
//     misses, with no error beyond the requests in flight at the kill;
//   - no reasoning is ever replayed outside the branch that produced it;
//   - after the relay restarts and its health is green, the front routes
//     its tokens back to it, and new conversations there replay again;
//     the old ones miss once (their newest turns were recorded elsewhere)
//     and replay from there on.
func TestFleet(t *testing.T) {
	const tokens = 9
	var toks []string
	for i := range tokens {
		toks = append(toks, fmt.Sprintf("fleet-token-%d-CANARY", i))
	}
	f := startFleet(t, toks)
	c := ctx(t)
	convos := make([]*fleetConvo, tokens)
	for i := range convos {
		convos[i] = &fleetConvo{token: toks[i], tag: fmt.Sprintf("fleet-c%d", i)}
	}
	failf := func(format string, args ...any) { t.Errorf(format, args...) }

	// Phase 1: two turns per conversation; the first tells where the
	// conversation lives.
	var before fleetStats
	eachConvo(convos, func(cv *fleetConvo) {
		for i := range 2 {
			r := f.turn(c, cv, "", i == 1)
			before.add(r)
			if r.err != nil {
				failf("%s before the kill: %v", cv.tag, r.err)
				return
			}
			if i == 0 {
				cv.home = r.relay
			} else if r.relay != cv.home {
				failf("%s moved from relay %d to %d with every relay healthy", cv.tag, cv.home, r.relay)
			}
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	per := make([]int, fleetRelays)
	for _, cv := range convos {
		per[cv.home]++
	}
	killed := 0
	for i := range per {
		if per[i] > per[killed] {
			killed = i
		}
	}
	if per[killed] == len(convos) {
		t.Fatalf("the front sent all %d tokens to one relay", len(convos))
	}
	t.Logf("figures: conversations per relay %v; killing relay %d", per, killed)
	var onKilled, survivors []*fleetConvo
	for _, cv := range convos {
		if cv.home == killed {
			onKilled = append(onKilled, cv)
		} else {
			survivors = append(survivors, cv)
		}
	}

	// Phase 2: a turn everywhere; the killed relay's are slow streams,
	// and it is killed once they have all reached the upstream.
	var surviving, inFlight fleetStats
	markers := make([]string, len(onKilled))
	for i, cv := range onKilled {
		markers[i] = cv.nextMarker()
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		eachConvo(survivors, func(cv *fleetConvo) {
			r := f.turn(c, cv, "", true)
			surviving.add(r)
			if r.err != nil || r.relay != cv.home {
				failf("%s during the kill: relay %d, %v", cv.tag, r.relay, r.err)
			}
		})
	})
	wg.Go(func() {
		eachConvo(onKilled, func(cv *fleetConvo) { inFlight.add(f.turn(c, cv, "[[slow:200ms]]", true)) })
	})
	for _, m := range markers {
		waitUpstream(t, f.fake, m)
	}
	f.relays[killed].Kill()
	wg.Wait()
	t.Logf("figures: requests in flight on the killed relay: %v", &inFlight)

	// Phase 3: three more turns each. Nothing fails; the killed relay's
	// conversations start over as misses on the other relays.
	var moved fleetStats
	eachConvo(convos, func(cv *fleetConvo) {
		for i := range 3 {
			r := f.turn(c, cv, "", i%2 == 0)
			if r.err != nil {
				failf("%s after the kill: %v", cv.tag, r.err)
				return
			}
			if cv.home != killed {
				surviving.add(r)
				if r.relay != cv.home {
					failf("%s moved from relay %d to %d although its relay is up", cv.tag, cv.home, r.relay)
				}
				continue
			}
			moved.add(r)
			if r.relay == killed || r.relay < 0 {
				failf("%s answered by relay %d while it is down", cv.tag, r.relay)
			}
			if i == 0 && r.replayed != 0 {
				failf("%s replayed %d turns on a relay that never saw it", cv.tag, r.replayed)
			}
		}
	})
	t.Logf("figures: surviving relays' conversations after the kill: %v", &surviving)
	t.Logf("figures: killed relay's conversations on the other relays: %v", &moved)
	if rate := surviving.rate(); rate < 0.99 {
		t.Errorf("surviving relays replayed %.3f of earlier turns, want >= 0.99; misses: %v", rate, surviving.misses)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Phase 4: restart the killed relay on its ledger; once its health is
	// green the front routes its tokens back to it.
	// (health is 503 until the cache app has opened the ledger, which
	// Caddy may start after the listener)
	f.relays[killed] = relaytest.Start(t, f.opts[killed])
	waitFor(t, "the restarted relay's health to turn green", func() bool {
		status, _ := relayHealth(f.relays[killed].BaseURL)
		return status == http.StatusOK
	})
	back := time.Now()
	for {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(modelsRequest(t, f.front.BaseURL, onKilled[0].token))
		if err == nil {
			resp.Body.Close()
			if f.index[resp.Header.Get("X-Fleet-Relay")] == killed && resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Since(back) > 30*time.Second {
			t.Fatal("the front did not route to the restarted relay within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("figures: the front routed to the restarted relay %v after its start", time.Since(back).Round(10*time.Millisecond))

	var restarted, returned fleetStats
	fresh := make([]*fleetConvo, len(onKilled))
	for i, cv := range onKilled {
		fresh[i] = &fleetConvo{token: cv.token, tag: fmt.Sprintf("fleet-new%d", i)}
	}
	eachConvo(append(fresh, onKilled...), func(cv *fleetConvo) {
		old := !strings.HasPrefix(cv.tag, "fleet-new")
		for i := range 3 {
			if old && i == 2 {
				break
			}
			r := f.turn(c, cv, "", i%2 == 1)
			if r.err != nil || r.relay != killed {
				failf("%s after the restart: relay %d, %v", cv.tag, r.relay, r.err)
				return
			}
			if !old {
				restarted.add(r)
				continue
			}
			// an old conversation comes back to its relay: its newest
			// turns were recorded elsewhere, so the first turn is a
			// miss, and replay resumes from that turn on
			returned.add(r)
			if i == 1 && r.replayed != 1 {
				failf("%s replayed %d turns after its first turn back, want the 1 recorded since", cv.tag, r.replayed)
			}
		}
	})
	t.Logf("figures: new conversations on the restarted relay: %v", &restarted)
	t.Logf("figures: old conversations back on the restarted relay: %v", &returned)
	if rate := restarted.rate(); rate < 0.99 {
		t.Errorf("the restarted relay replayed %.3f of new conversations' earlier turns, want >= 0.99", rate)
	}
	for _, s := range []*fleetStats{&before, &surviving, &inFlight, &moved, &restarted, &returned} {
		if s.wrong != 0 {
			t.Errorf("wrong replays: %v", s)
		}
	}
	if before.rate() < 0.99 {
		t.Errorf("before the kill: %v", &before)
	}
}

// modelsRequest is GET /v1/models with token, for probing the route.
func modelsRequest(t *testing.T, base, token string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, base+"/v1/models", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}
