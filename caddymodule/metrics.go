package caddymodule

import (
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bodylog"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/translate"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache"
)

// The relay's runtime counters live for the whole process: every
// configuration's handler and engine count into them, so a `caddy reload`
// neither resets them nor double-counts. They are plain atomics; the
// Prometheus collector below reads them at scrape time, and the admin
// status reply reads the same values.
var (
	// engineCounters are shared by every reasoning cache engine.
	engineCounters = new(reasoningcache.Counters)
	// relayCounters are the handler's own counters.
	relayCounters relayStats
	// processStart is when this process loaded the module.
	processStart = time.Now()
)

// routes and outcomes are the fixed label values of requests_total.
var (
	routes   = [...]string{"chat", "responses", "models", "other"}
	outcomes = [...]string{"ok", "client_error", "unauthorized", "client_gone", "upstream_error", "timeout", "cache_unavailable", "relay_error"}
)

// tokenKinds are the fixed label values of usage_tokens_total.
var tokenKinds = [...]string{"input", "cached_input", "output", "reasoning"}

// relayStats are the handler's counters.
type relayStats struct {
	requests    [len(routes)][len(outcomes)]atomic.Int64
	responses   [2]atomic.Int64                  // [replayed] responses whose usage was counted
	tokens      [2][len(tokenKinds)]atomic.Int64 // [replayed][kind]
	bodyLogGone atomic.Int64                     // drops of body-log writers that have closed
	// prepWaiting is how many requests wait for a preparation slot now,
	// across every handler (prepgate.go).
	prepWaiting atomic.Int64
	// bodyBytes is how many client body bytes the handlers' body budgets
	// count now (budget.go).
	bodyBytes atomic.Int64
}

// routeIndex maps a route name to its index in routes.
func routeIndex(route string) int {
	for i, r := range routes {
		if r == route {
			return i
		}
	}
	return len(routes) - 1
}

// outcomeOfReason maps a request's logged reason code to one of outcomes.
func outcomeOfReason(reason string) int {
	switch {
	case reason == "ok":
		return 0
	case reason == "unauthorized":
		return 2
	case reason == "client_gone", reason == "client_write_failed", reason == "delivery_failed":
		return 3
	case strings.HasSuffix(reason, "_timeout"):
		return 5
	case reason == "cache_unavailable":
		return 6
	case strings.HasPrefix(reason, "upstream_"), reason == "sse_event_too_large", reason == "response_too_large":
		return 4
	case reason == "invalid_request", reason == "request_too_large", reason == "method_not_allowed",
		reason == "unknown_route", reason == "unsupported_encoding", reason == "body_read_failed":
		return 1
	}
	return 7
}

// countRequest counts a finished request.
func countRequest(route, reason string) {
	relayCounters.requests[routeIndex(route)][outcomeOfReason(reason)].Add(1)
}

// countUsage adds one upstream answer's token usage, apart for answers to
// requests that carried replayed reasoning.
func countUsage(u *translate.Usage, replayed bool) {
	if u == nil {
		return
	}
	i := 0
	if replayed {
		i = 1
	}
	relayCounters.responses[i].Add(1)
	t := &relayCounters.tokens[i]
	t[0].Add(u.InputTokens)
	t[1].Add(u.InputTokensDetails.CachedTokens)
	t[2].Add(u.OutputTokens)
	t[3].Add(u.OutputTokensDetails.ReasoningTokens)
}

// bodyLogDrops is how many body-log writes were dropped since start: those
// of closed writers plus those of the writers still open.
func bodyLogDrops() int64 {
	n := relayCounters.bodyLogGone.Load()
	bodyLogWriters.Range(func(_, v any) bool {
		if d, ok := v.(bodyLogDestructor); ok {
			n += d.w.Stats().Dropped
		}
		return true
	})
	return n
}

// bodyLogClosed remembers a closing body-log writer's drops.
func bodyLogClosed(w *bodylog.Writer) {
	relayCounters.bodyLogGone.Add(w.Stats().Dropped)
}

// Histograms of the ledger's writer, fed by ledger.Options.ObserveBatch.
var (
	commitSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "caddy", Subsystem: "reasoning_relay", Name: "ledger_commit_seconds",
		Help:    "Time one ledger transaction took, from BEGIN to the end of COMMIT (fsync included).",
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
	})
	batchOperations = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "caddy", Subsystem: "reasoning_relay", Name: "ledger_batch_operations",
		Help:    "Operations committed together in one ledger transaction (group commit).",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
	})
)

// observeBatch is the ledger's ObserveBatch hook.
func observeBatch(ops int, took time.Duration, _ bool) {
	commitSeconds.Observe(took.Seconds())
	batchOperations.Observe(float64(ops))
}

// collector exposes the counters above on Caddy's metrics registry.
type collector struct{}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("caddy_reasoning_relay_"+name, help, labels, nil)
}

var (
	descRequests       = desc("requests_total", "Requests the relay finished, by route and outcome.", "route", "outcome")
	descCacheRequests  = desc("cache_requests_total", "Requests that reached the reasoning cache.")
	descBypasses       = desc("cache_bypasses_total", "Requests the reasoning cache relayed without planning, dispatch and capture, by reason.", "reason")
	descReplayPlans    = desc("replay_plans_total", "Requests dispatched carrying at least one replayed block.")
	descReplayedBlocks = desc("replayed_blocks_total", "Earlier assistant turns dispatched as their original output blocks.")
	descReplayOK       = desc("replay_successes_total", "Requests carrying replayed blocks that the upstream answered with a complete response.")
	descRejections     = desc("replay_rejections_total", "Upstream rejections of replayed reasoning (400 invalid_encrypted_content, 404 item not found).")
	descResends        = desc("replay_resends_total", "Requests resent without replay after a rejection.")
	descCapacity       = desc("capacity_fallbacks_total", "Requests relayed or dispatched without replay for lack of memory budget or sessions.")
	descPoisons        = desc("poisons_total", "Positions poisoned (nothing replayed from them again), by reason.", "reason")
	descConflicts      = desc("conflicts_total", "End conflicts recorded (a turn produced twice differently, or replay rejected).")
	descObservations   = desc("observations_total", "Completed responses committed to the ledger.")
	descPayloads       = desc("payloads_written_total", "Replayable original outputs committed.")
	descPayloadBytes   = desc("payload_bytes_written_total", "Bytes of replayable original outputs committed.")
	descSessions       = desc("cache_sessions", "Requests holding a reasoning cache session now.")
	descSessionBytes   = desc("cache_session_bytes", "Bytes of the memory budget held by sessions now.")
	descSessionCap     = desc("cache_session_capacity_bytes", "Bytes of the memory budget sessions may hold in total.")
	descPrepWaiting    = desc("prep_waiting", "Requests waiting for a preparation slot now, their bodies not yet read.")
	descBodyBytes      = desc("request_body_bytes", "Client body bytes counted against max_request_bytes_in_flight now.")
	descDatabaseBytes  = desc("ledger_database_bytes", "Size of the ledger's database file.")
	descWALBytes       = desc("ledger_wal_bytes", "Size of the ledger's write-ahead log.")
	descResponses      = desc("usage_responses_total", "Upstream answers whose token usage was counted, by whether the request carried replayed reasoning.", "replayed")
	descTokens         = desc("usage_tokens_total", "Upstream usage tokens, by kind and by whether the request carried replayed reasoning.", "replayed", "kind")
	descBodyLogDrops   = desc("capture_drops_total", "Body capture writes dropped because the capture directory did not keep up.")
	descSnapshots      = desc("snapshots_total", "Inspection snapshots published through the admin API.")
)

// Describe implements prometheus.Collector.
func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRequests, descCacheRequests, descBypasses, descReplayPlans,
		descReplayedBlocks, descReplayOK, descRejections, descResends, descCapacity, descPoisons,
		descConflicts, descObservations, descPayloads, descPayloadBytes, descSessions, descSessionBytes,
		descSessionCap, descPrepWaiting, descBodyBytes, descDatabaseBytes, descWALBytes, descResponses, descTokens, descBodyLogDrops, descSnapshots} {
		ch <- d
	}
	commitSeconds.Describe(ch)
	batchOperations.Describe(ch)
}

// Collect implements prometheus.Collector. It reads atomics and stats two
// files; it never queries the ledger.
func (collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	for r, route := range routes {
		for o, outcome := range outcomes {
			counter(descRequests, relayCounters.requests[r][o].Load(), route, outcome)
		}
	}
	v := engineCounters.Values()
	counter(descCacheRequests, v.Requests)
	for _, reason := range reasoningcache.BypassReasons {
		counter(descBypasses, v.Bypasses[reason], reason)
	}
	counter(descReplayPlans, v.ReplayPlans)
	counter(descReplayedBlocks, v.ReplayedBlocks)
	counter(descReplayOK, v.ReplaySuccesses)
	counter(descRejections, v.ReplayRejections)
	counter(descResends, v.ReplayResends)
	counter(descCapacity, v.CapacityFallbacks)
	for _, reason := range reasoningcache.PoisonReasons {
		counter(descPoisons, v.PoisonsByReason[reason], reason)
	}
	counter(descConflicts, v.Conflicts)
	counter(descObservations, v.Observations)
	counter(descPayloads, v.Payloads)
	counter(descPayloadBytes, v.PayloadBytes)
	var sessions reasoningcache.Stats
	var dbBytes, walBytes int64
	if a := activeApp.Load(); a != nil {
		if a.engine != nil {
			sessions = a.engine.Stats()
		}
		dbBytes, walBytes = statSize(a.key), statSize(a.key+"-wal")
	}
	gauge(descSessions, int64(sessions.Sessions))
	gauge(descSessionBytes, sessions.BytesUsed)
	gauge(descSessionCap, sessions.Capacity)
	gauge(descPrepWaiting, relayCounters.prepWaiting.Load())
	gauge(descBodyBytes, relayCounters.bodyBytes.Load())
	gauge(descDatabaseBytes, dbBytes)
	gauge(descWALBytes, walBytes)
	for i, replayed := range []string{"false", "true"} {
		counter(descResponses, relayCounters.responses[i].Load(), replayed)
		for k, kind := range tokenKinds {
			counter(descTokens, relayCounters.tokens[i][k].Load(), replayed, kind)
		}
	}
	counter(descBodyLogDrops, bodyLogDrops())
	counter(descSnapshots, snapshotsPublished.Load())
	commitSeconds.Collect(ch)
	batchOperations.Collect(ch)
}

// registerMetrics adds the relay's collector to a configuration's metrics
// registry. Caddy makes a new registry for every configuration; the
// collector is one process-wide object, so its values carry on across
// reloads.
func registerMetrics(reg *prometheus.Registry) error {
	if reg == nil {
		return nil
	}
	var already prometheus.AlreadyRegisteredError
	if err := reg.Register(collector{}); err != nil && !errors.As(err, &already) {
		return err
	}
	return nil
}

// Interface guards
var _ prometheus.Collector = collector{}
