package e2e

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	_ "modernc.org/sqlite"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

// ledgerPath is where cacheGlobal puts the ledger of a relay.
func ledgerPath(r *relay) string { return filepath.Join(r.caddy.Dir, "data", "ledger.sqlite") }

// relayCLI runs `caddy reasoning-relay <args>` against r's admin socket
// with r's HOME.
func relayCLI(t *testing.T, r *relay, args ...string) (string, string, error) {
	t.Helper()
	return cli(t, []string{"HOME=" + r.caddy.Dir}, append([]string{"reasoning-relay"}, args...)...)
}

// statusJSON runs `caddy reasoning-relay status --json` and decodes it.
func statusJSON(t *testing.T, r *relay) map[string]any {
	t.Helper()
	out, errOut, err := relayCLI(t, r, "status", "--address", r.caddy.Admin, "--json")
	if err != nil {
		t.Fatalf("status: %v\n%s%s", err, out, errOut)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("status reply %q: %v", out, err)
	}
	return m
}

// field returns the number at a dotted path of a decoded JSON object.
func field(t *testing.T, m map[string]any, path string) float64 {
	t.Helper()
	var v any = m
	for _, k := range strings.Split(path, ".") {
		o, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("status has no %s", path)
		}
		v = o[k]
	}
	switch n := v.(type) {
	case float64:
		return n
	case bool:
		if n {
			return 1
		}
		return 0
	}
	t.Fatalf("status %s is %T %v, not a number", path, v, v)
	return 0
}

// freshStatus polls the status until its ledger aggregates were read after
// since (they are reused for 5 s).
func freshStatus(t *testing.T, r *relay, since time.Time) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := statusJSON(t, r)
		if int64(field(t, st, "ledger.at")) >= since.UnixMilli() {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ledger aggregates were not refreshed: %v", st["ledger"])
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// payloadTouches reads every payload's touched_at from the live ledger
// (read-only; the relay keeps running).
func payloadTouches(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s sql.NullString
	if err := db.QueryRow(`SELECT group_concat(payload_id || ':' || touched_at || ':' || row_version, ',') FROM (SELECT * FROM payloads ORDER BY payload_id)`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s.String
}

// TestOperateStatusAndMetrics: the status command and /metrics on the
// admin socket show what a replayed conversation did, and inspection
// touches no payload.
func TestOperateStatusAndMetrics(t *testing.T) {
	r := cacheRelay(t, "", "")
	before := statusJSON(t, r)
	for _, k := range []string{"cache.requests", "cache.replayed_blocks", "usage.with_replay.responses"} {
		if v := field(t, before, k); v != 0 {
			t.Fatalf("%s = %v before any traffic", k, v)
		}
	}
	if field(t, before, "open") != 1 || field(t, before, "enabled") != 1 {
		t.Fatalf("status before traffic: %v", before)
	}

	cv := newConvo(t, r, relayToken, "ops-status", nil)
	cv.say("hello", false)
	cv.say("go on", true)
	cv.say("and again", false) // carries 2 replayed turns
	replayed := 0
	for _, req := range r.fake.Requests() {
		replayed += len(req.Replayed)
	}
	if replayed != 3 {
		t.Fatalf("the fake saw %d replayed turns, want 1 + 2", replayed)
	}

	touched := payloadTouches(t, ledgerPath(r))
	after := freshStatus(t, r, time.Now())
	if again := payloadTouches(t, ledgerPath(r)); again != touched {
		t.Fatalf("inspection touched payloads:\n%s\n%s", touched, again)
	}
	want := map[string]float64{
		"cache.requests": 3, "cache.full_cache": 3, "cache.replay_plans": 2, "cache.replayed_blocks": 3,
		"cache.replay_successes": 2, "cache.replay_rejections": 0, "cache.observations": 3, "cache.payloads": 3,
		"requests.chat.ok": 3, "usage.with_replay.responses": 2, "usage.without_replay.responses": 1,
		"ledger.payloads.value": 3, "ledger.payloads.exact": 1, "ledger.observations.value": 3,
		"ledger.intents.value": 0, "ledger.coverage_gap": 0, "sessions.active": 0,
		"retention.guard_latched": 0, "retention.admitting": 1, "retention.barrier_active": 1,
		"retention.retention_seconds": 30 * 24 * 3600,
	}
	for k, w := range want {
		if got := field(t, after, k); got != w {
			t.Errorf("status %s = %v, want %v", k, got, w)
		}
	}
	for _, k := range []string{"usage.with_replay.cached_input_tokens", "usage.with_replay.reasoning_tokens",
		"ledger.database_bytes", "ledger.payload_bytes.value", "writer.batches",
		"retention.reserve_wanted_bytes", "retention.barrier_ends_at"} {
		if field(t, after, k) <= 0 {
			t.Errorf("status %s is not positive", k)
		}
	}
	if t.Failed() {
		t.Fatalf("status: %v", after)
	}

	// the human summary, with the address read from the Caddyfile as
	// `caddy reload` does
	out, errOut, err := relayCLI(t, r, "status", "--config", r.caddy.CaddyfilePath())
	if err != nil || !strings.Contains(out, "2 requests carried 3 replayed blocks") ||
		!strings.Contains(out, "restart barrier holds deletion until") {
		t.Fatalf("status summary: %v\n%s%s", err, out, errOut)
	}
	t.Logf("figures: status summary after a 3-turn conversation:\n%s", out)

	// Caddy's /metrics on the admin socket carries the relay's metrics
	resp, err := r.caddy.AdminClient().Get("http://admin/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	metrics := string(body)
	for name, want := range map[string]float64{
		`caddy_reasoning_relay_replayed_blocks_total`:                                   3,
		`caddy_reasoning_relay_requests_total{outcome="ok",route="chat"}`:               3,
		`caddy_reasoning_relay_usage_responses_total{replayed="true"}`:                  2,
		`caddy_reasoning_relay_cache_bypasses_total{reason="capacity"}`:                 0,
		`caddy_reasoning_relay_payloads_written_total`:                                  3,
		`caddy_reasoning_relay_usage_tokens_total{kind="cached_input",replayed="true"}`: field(t, after, "usage.with_replay.cached_input_tokens"),
	} {
		if got, ok := metricValue(metrics, name); !ok || got != want {
			t.Errorf("metric %s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	if n, ok := metricValue(metrics, "caddy_reasoning_relay_ledger_commit_seconds_count"); !ok || n == 0 {
		t.Errorf("no ledger commit latency observed")
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", grepLines(metrics, "caddy_reasoning_relay_"))
	}
}

// metricValue finds one sample in a Prometheus text exposition.
func metricValue(exposition, sample string) (float64, bool) {
	for _, line := range strings.Split(exposition, "\n") {
		if rest, ok := strings.CutPrefix(line, sample+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// liveSecret reads the cache secret of a ledger (read-only).
func liveSecret(t *testing.T, path string) []byte {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var secret []byte
	if err := db.QueryRow(`SELECT secret FROM meta`).Scan(&secret); err != nil || len(secret) != 32 {
		t.Fatalf("secret: %v (%d bytes)", err, len(secret))
	}
	return secret
}

var snapshotLine = regexp.MustCompile(`(?m)^snapshot (\S+)$`)

// TestOperateSnapshotDuringStreams: a snapshot taken while two streams run
// opens, passes integrity_check, holds no secret, is 0400, and replay goes
// on exactly afterwards.
func TestOperateSnapshotDuringStreams(t *testing.T) {
	r := cacheRelay(t, "", "")
	cv := newConvo(t, r, relayToken, "ops-snap", nil)
	cv.say("hello", true)
	cv.say("more", false)

	// two slow streams (12 events, 300 ms apart) in flight
	done := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := run(t, r.client(relayToken), openai.ChatCompletionNewParams{
				Model:    "cursor-fast",
				Messages: []openai.ChatCompletionMessageParamUnion{userMsg(fmt.Sprintf("ops-snap-stream%d [[slow:300ms]]", i))},
			}, true)
			done <- err
		}()
	}
	waitFor(t, "two streams in flight", func() bool {
		return field(t, statusJSON(t, r), "sessions.active") == 2
	})
	out, errOut, err := relayCLI(t, r, "snapshot", "--address", r.caddy.Admin)
	if err != nil {
		t.Fatalf("snapshot: %v\n%s%s", err, out, errOut)
	}
	m := snapshotLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("snapshot output names no file:\n%s", out)
	}
	path := m[1]
	if active := field(t, statusJSON(t, r), "sessions.active"); active == 0 {
		t.Log("note: the streams ended before the snapshot finished")
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("a stream running during the snapshot failed: %v", err)
		}
	}
	if filepath.Dir(path) != filepath.Join(r.caddy.Dir, ".reasoning-relay-inspection") {
		t.Fatalf("snapshot %s is not in the default directory under HOME", path)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o400 {
		t.Fatalf("snapshot file %v: %v", fi, err)
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Fatalf("snapshot directory mode %s", di.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, liveSecret(t, ledgerPath(r))) {
		t.Fatal("the snapshot holds the cache secret")
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	var obs int
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q %v", check, err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM observations`).Scan(&obs); err != nil || obs < 2 {
		t.Fatalf("snapshot holds %d observations (%v), want the conversation's 2 at least", obs, err)
	}

	// replay continues exactly: the next turn carries both earlier turns
	n := len(r.fake.Requests())
	cv.say("after the snapshot", true)
	last := r.fake.Requests()[len(r.fake.Requests())-1]
	if len(r.fake.Requests()) != n+1 || len(last.Replayed) != 2 {
		t.Fatalf("after the snapshot %d turns were replayed, want 2", len(last.Replayed))
	}
	st := statusJSON(t, r)
	if field(t, st, "snapshots.published") != 1 || field(t, st, "snapshots.running") != 0 {
		t.Fatalf("snapshot status: %v", st["snapshots"])
	}
}

// waitFor polls cond until it holds (at most 30 s).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOperateBackupRestore: backup refuses a live relay; a stopped relay's
// ledger round-trips through backup and restore; the restored ledger
// quarantines every earlier turn and records new ones; a copy left with a
// .blocked file cannot be opened.
func TestOperateBackupRestore(t *testing.T) {
	r := cacheRelay(t, "", "")
	cv := newConvo(t, r, relayToken, "ops-backup", nil)
	cv.say("hello", false)
	cv.say("more", true)

	dir := r.caddy.Dir
	backup := filepath.Join(dir, "backups", "ledger-backup.sqlite")
	out, errOut, err := relayCLI(t, r, "backup", "--database", ledgerPath(r), "--output", backup)
	if err == nil || !strings.Contains(errOut, "running relay") {
		t.Fatalf("backup of a live relay: %v\n%s%s", err, out, errOut)
	}
	r.caddy.Stop()
	if out, errOut, err = relayCLI(t, r, "backup", "--database", ledgerPath(r), "--output", backup, "--json"); err != nil {
		t.Fatalf("backup: %v\n%s%s", err, out, errOut)
	}
	t.Logf("figures: backup: %s", strings.TrimSpace(out))
	restored := filepath.Join(dir, "data", "restored.sqlite")
	if out, errOut, err = relayCLI(t, r, "restore", "--backup", backup, "--database", restored); err != nil {
		t.Fatalf("restore: %v\n%s%s", err, out, errOut)
	}
	if _, errOut, err = relayCLI(t, r, "restore", "--backup", backup, "--database", ledgerPath(r)); err == nil || !strings.Contains(errOut, "never overwrites") {
		t.Fatalf("restore over an existing ledger: %v\n%s", err, errOut)
	}
	for _, p := range []string{backup + ".blocked", restored + ".blocked"} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s is left after a finished copy", p)
		}
	}

	// the relay on the restored ledger: nothing from before is replayed
	global := strings.Replace(cacheGlobal, "{DIR}/data/ledger.sqlite", restored, 1)
	env := []string{"RT_UPSTREAM_KEY=" + upstreamKey, "RT_TOKEN=" + relayToken}
	site := strings.ReplaceAll(fmt.Sprintf(siteConfig, ""), "{UPSTREAM}", r.up.URL)
	c2 := relaytest.Start(t, relaytest.Options{Global: global, Site: site, Env: env, Dir: dir, LogLevel: "DEBUG"})
	r2 := &relay{caddy: c2, fake: r.fake, up: r.up}
	cv.r, cv.c = r2, r2.client(relayToken)
	cv.expect = false
	cv.say("after the restore", false) // the two earlier turns are quarantined
	cv.expect = true
	cv.turns = cv.turns[len(cv.turns)-1:] // only the new turn may come back
	n := len(r.fake.Requests())
	cv.say("and on", true)
	if last := r.fake.Requests()[n]; len(last.Replayed) != 1 {
		t.Fatalf("after the restore %d turns were replayed, want the 1 new one", len(last.Replayed))
	}
	if !strings.Contains(c2.Logs(), `"coverage_gap_consumed":true`) {
		t.Fatal("opening the restored ledger did not consume its coverage gap")
	}
	c2.Stop()

	// a copy whose .blocked file is still there cannot be opened
	blocked := filepath.Join(dir, "data", "blocked.sqlite")
	if _, errOut, err = relayCLI(t, r, "backup", "--database", restored, "--output", blocked); err != nil {
		t.Fatalf("backup: %v\n%s", err, errOut)
	}
	if err := os.WriteFile(blocked+".blocked", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	logs := relaytest.StartErr(t, relaytest.Options{Global: strings.Replace(cacheGlobal, "{DIR}/data/ledger.sqlite", blocked, 1),
		Site: site, Env: env, Dir: dir})
	if !strings.Contains(logs, "did not finish") {
		t.Fatalf("a blocked ledger was not refused clearly:\n%s", logs)
	}
}
