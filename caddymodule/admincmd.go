package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// DefaultAdminSocket is the admin endpoint caddyfile.example listens on.
// The status and snapshot commands use it when neither --address nor
// --config is given and it exists.
const DefaultAdminSocket = "unix/data/caddy-admin.sock"

func init() {
	cliCommands = append(cliCommands, statusCommand, snapshotCommand)
}

// adminFlags adds the flags `caddy reload` uses to find the admin API.
func adminFlags(cmd *cobra.Command) {
	cmd.Flags().String("address", "", "admin API address, e.g. unix//run/caddy/admin.sock (if --config is not used)")
	cmd.Flags().StringP("config", "c", "", "configuration file to read the admin address from (if --address is not used)")
	cmd.Flags().StringP("adapter", "a", "", "config adapter of --config")
	cmd.Flags().Bool("json", false, "print the admin API's JSON reply instead of a summary")
}

func statusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [--address <admin>] [--config <file> [--adapter <name>]] [--json]",
		Short: "Show the running relay's reasoning cache counters and ledger figures",
		Long: `
Asks the running Caddy, through its admin API (GET /reasoning_cache/status),
for the reasoning cache's runtime counters since the process started and the
ledger's aggregates (read at most every 5 seconds; each count says whether it
is exact or a lower bound). Inspection changes nothing in the ledger.

The admin address is --address, or the admin address of --config, like
` + "`caddy reload`" + `; without either, ./data/caddy-admin.sock (the socket of
caddyfile.example) when it exists, else Caddy's default address.
--json prints the reply as it came; the README documents every field.
`,
		Example: "caddy reasoning-relay status --address 'unix//run/caddy/admin.sock'",
		RunE:    caddycmd.WrapCommandFuncForCobra(cmdStatus),
	}
	adminFlags(cmd)
	return cmd
}

func snapshotCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot [--address <admin>] [--config <file> [--adapter <name>]] [--json]",
		Short: "Take an online inspection snapshot of the running relay's ledger",
		Long: `
Asks the running Caddy (POST /reasoning_cache/snapshot) for a consistent copy
of its ledger, taken with SQLite's online backup API while requests go on.
The copy omits the cache secret: it is for inspection with sqlite3, not a
recovery backup (see 'caddy reasoning-relay backup'). It is published
owner-read-only in the reasoning_cache app's snapshot_dir (default
~/.reasoning-relay-inspection of the user Caddy runs as); the command prints
its path. Only one snapshot runs at a time; earlier ones are never removed.
`,
		Example: "caddy reasoning-relay snapshot --config Caddyfile",
		RunE:    caddycmd.WrapCommandFuncForCobra(cmdSnapshot),
	}
	adminFlags(cmd)
	return cmd
}

func cmdStatus(fl caddycmd.Flags) (int, error) {
	return runAdminCommand(fl, http.MethodGet, "/reasoning_cache/status", os.Stdout, printStatus)
}

func cmdSnapshot(fl caddycmd.Flags) (int, error) {
	return runAdminCommand(fl, http.MethodPost, "/reasoning_cache/snapshot", os.Stdout, printSnapshot)
}

// runAdminCommand sends one request to the admin API and prints the reply.
func runAdminCommand(fl caddycmd.Flags, method, uri string, stdout io.Writer, summary func(io.Writer, []byte) error) (int, error) {
	addr, err := adminAddress(fl.String("address"), fl.String("config"), fl.String("adapter"))
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	resp, err := caddycmd.AdminAPIRequest(addr, method, uri, make(http.Header), nil)
	if err != nil {
		// AdminAPIRequest has already turned an error status into an error
		return caddy.ExitCodeFailedStartup, fmt.Errorf("%s %s on the admin API at %s: %w", method, uri, addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return caddy.ExitCodeFailedStartup, fmt.Errorf("reading the admin API's reply: %w", err)
	}
	if fl.Bool("json") {
		_, err = stdout.Write(body)
		return caddy.ExitCodeSuccess, err
	}
	if err := summary(stdout, body); err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	return caddy.ExitCodeSuccess, nil
}

// adminAddress resolves the admin API address like `caddy reload`, with
// caddyfile.example's socket as the fallback when it exists.
func adminAddress(address, config, adapter string) (string, error) {
	if address == "" && config == "" && os.Getenv("CADDY_ADMIN") == "" {
		if fi, err := os.Stat(strings.TrimPrefix(DefaultAdminSocket, "unix/")); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return DefaultAdminSocket, nil
		}
	}
	addr, err := caddycmd.DetermineAdminAPIAddress(address, nil, config, adapter)
	if err != nil {
		return "", fmt.Errorf("finding the admin API address: %w", err)
	}
	return addr, nil
}

func printSnapshot(w io.Writer, body []byte) error {
	var res ledger.SnapshotResult
	if err := json.Unmarshal(body, &res); err != nil {
		return fmt.Errorf("decoding the snapshot reply: %w", err)
	}
	if res.Path == "" {
		return errors.New("the admin API's reply names no snapshot")
	}
	_, err := fmt.Fprintf(w, "snapshot %s\n%s (%d pages in %d steps) in %d ms\nopen it with: sqlite3 -readonly %s\n",
		res.Path, humanize.IBytes(uint64(max(res.Bytes, 0))), res.Pages, res.Steps, res.TookMillis, res.Path)
	return err
}

func printStatus(w io.Writer, body []byte) error {
	var st Status
	if err := json.Unmarshal(body, &st); err != nil {
		return fmt.Errorf("decoding the status reply: %w", err)
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	state := "disabled"
	if st.Enabled {
		state = "enabled"
	}
	if st.Database == "" {
		state = "not running"
	}
	p("reasoning cache  %s, %s (up %s)", st.Database, state, humanDuration(st.UptimeSeconds))
	var routeNames []string
	for r := range st.Requests {
		routeNames = append(routeNames, r)
	}
	sort.Strings(routeNames)
	for _, r := range routeNames {
		var total int64
		var parts []string
		for _, o := range outcomes {
			if n := st.Requests[r][o]; n > 0 {
				total += n
				parts = append(parts, fmt.Sprintf("%s %d", o, n))
			}
		}
		if total > 0 {
			p("requests %-9s %d (%s)", r, total, strings.Join(parts, ", "))
		}
	}
	c := st.Cache
	p("cache            %d requests, %d with the full cache", c.Requests, c.FullCache)
	p("replay           %d requests carried %d replayed blocks; %d answered, %d rejected, %d resent",
		c.ReplayPlans, c.ReplayedBlocks, c.ReplaySuccesses, c.ReplayRejections, c.ReplayResends)
	p("bypasses         %s", byReason(c.Bypasses))
	p("recorded         %d observations, %d payloads (%s); %d conflicts, %d capacity fallbacks",
		c.Observations, c.Payloads, humanize.IBytes(uint64(max(c.PayloadBytes, 0))), c.Conflicts, c.CapacityFallbacks)
	p("poisons          %s", byReason(c.PoisonsByReason))
	p("sessions         %d active, %s of %s in use",
		st.Sessions.Active, humanize.IBytes(uint64(max(st.Sessions.BytesInUse, 0))), humanize.IBytes(uint64(max(st.Sessions.CapacityBytes, 0))))
	for _, u := range []struct {
		name string
		t    TokenUsage
	}{{"with replay", st.Usage.WithReplay}, {"without replay", st.Usage.WithoutReplay}} {
		p("usage %-14s %d answers: %d input (%d cached), %d output (%d reasoning) tokens",
			u.name, u.t.Responses, u.t.InputTokens, u.t.CachedInputTokens, u.t.OutputTokens, u.t.ReasoningTokens)
	}
	printLedger(p, st.Ledger)
	printRetention(p, st.Retention)
	if st.Writer != nil {
		p("ledger writer    %d transactions, %d operations, largest batch %d", st.Writer.Batches, st.Writer.Ops, st.Writer.MaxBatch)
	}
	if st.BodyLogDrops > 0 {
		p("capture          %d writes dropped", st.BodyLogDrops)
	}
	snap := fmt.Sprintf("%d published", st.Snapshots.Published)
	if st.Snapshots.Running {
		snap += ", one running"
	}
	if st.Snapshots.Last != "" {
		snap += ", last " + st.Snapshots.Last
	}
	p("snapshots        %s", snap)
	return nil
}

// printLedger prints the ledger's figures (nil: not running).
func printLedger(p func(string, ...any), l *LedgerStatus) {
	if l == nil {
		return
	}
	if l.Error != "" {
		p("ledger           unreadable: %s", l.Error)
	} else {
		p("ledger           %s scopes, %s observations (%s replayable), %s payloads (%s bytes)",
			fig(l.Scopes), fig(l.Observations), fig(l.ReplayableObservations), fig(l.Payloads), fig(l.PayloadBytes))
		p("markers          %s start-poison, %s end-conflict; %s intents in flight; coverage gap %v",
			fig(l.StartPoisonMarkers), fig(l.EndConflictMarkers), fig(l.Intents), l.CoverageGap)
		idle := "no payloads"
		if l.OldestPayloadTouchedAt > 0 {
			idle = "oldest payload idle " + humanDuration(l.OldestPayloadIdleSeconds)
		}
		p("files            database %s, WAL %s; %s (figures %d ms old)",
			humanize.IBytes(uint64(max(l.DatabaseBytes, 0))), humanize.IBytes(uint64(max(l.WALBytes, 0))), idle, l.AgeMillis)
	}
}

// printRetention prints retention and disk admission (nil: not running).
func printRetention(p func(string, ...any), r *RetentionStatus) {
	if r == nil {
		return
	}
	if r.GuardLatched {
		p("GUARD LATCHED    the cache is off: %s; free disk space, delete %s, restart", r.GuardCause, r.GuardPath)
	}
	barrier := "lifted"
	if r.BarrierActive {
		barrier = fmt.Sprintf("holds deletion until %s (%s)",
			time.UnixMilli(r.BarrierEndsAt).UTC().Format(time.RFC3339), r.BarrierReason)
	}
	cleanup := "not run yet"
	if r.LastCleanupAt != nil {
		cleanup = fmt.Sprintf("last at %s deleted %d (%d since start)",
			time.UnixMilli(*r.LastCleanupAt).UTC().Format(time.RFC3339), r.LastCleanupDeleted, r.DeletedTotal)
	}
	p("retention        %s; restart barrier %s; cleanup %s",
		humanDuration(r.RetentionSeconds), barrier, cleanup)
	admit := "admitting new outputs"
	if !r.Admitting {
		admit = "NOT admitting new outputs (disk pressure)"
	}
	p("disk             reserve %s of %s; %s; free %s",
		humanize.IBytes(uint64(max(r.ReserveBytes, 0))), humanize.IBytes(uint64(max(r.ReserveWantedBytes, 0))), admit,
		humanize.IBytes(uint64(max(r.FreeBytes, 0))))
}

// fig prints a Figure, with a "≥" when it is a lower bound.
func fig(f ledger.Figure) string {
	if f.Exact {
		return fmt.Sprint(f.Value)
	}
	return fmt.Sprintf("≥%d", f.Value)
}

func humanDuration(sec int64) string {
	switch {
	case sec < 120:
		return fmt.Sprintf("%ds", sec)
	case sec < 7200:
		return fmt.Sprintf("%dm", sec/60)
	case sec < 172800:
		return fmt.Sprintf("%dh", sec/3600)
	}
	return fmt.Sprintf("%dd", sec/86400)
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// byReason lists the nonzero counts of m as "reason n, …" in reason
// order, or "none".
func byReason(m map[string]int64) string {
	var parts []string
	for _, r := range sortedKeys(m) {
		if n := m[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
