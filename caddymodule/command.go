package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bundle"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/redact"
)

// cliCommands build the children of `caddy reasoning-relay`: replay here,
// status and snapshot (admincmd.go) and backup and restore (backupcmd.go)
// are appended by those files' init functions; the group itself is
// registered once, here.
var cliCommands = []func() *cobra.Command{replayCommand}

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "reasoning-relay",
		Usage: "<command> [flags]",
		Short: "Operate the reasoning relay: status, snapshots, backups, replay bundles",
		Long: `
Tools of the reasoning relay. status and snapshot talk to the running Caddy
through its admin API; the others work on files (ledgers, captures, bundles)
and never talk to a running Caddy.

  caddy reasoning-relay status          runtime counters and ledger figures of the running relay
  caddy reasoning-relay snapshot        online inspection copy of the running relay's ledger
  caddy reasoning-relay backup          recovery copy of a stopped relay's ledger
  caddy reasoning-relay restore         new ledger from a backup, for a stopped relay
  caddy reasoning-relay replay export   build a replay bundle from body captures
  caddy reasoning-relay replay compare  replay a bundle and compare the answer
`,
		CobraFunc: func(cmd *cobra.Command) {
			for _, build := range cliCommands {
				cmd.AddCommand(build())
			}
		},
	})
}

// replayCommand is `caddy reasoning-relay replay export|compare`.
func replayCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Turn a captured request back into the literal request, and replay it",
		Long: `
Works on the body captures a reasoning_relay block writes with log_bodies <dir>.

export reads every capture of one request (by its X-Relay-Request-Id) and
writes a self-contained, hash-verified, redacted bundle, offline.

compare sends a bundle's request again, only with --execute, and writes what
differs from the recorded answer.
`,
	}
	export := &cobra.Command{
		Use:   "export --request-id <id> --logs-dir <dir> --output <file> [--attempt <n>] [--format text|json]",
		Short: "Build a deterministic replay bundle of one captured request",
		Long: `
Reads every index file under --logs-dir and every capture of --request-id,
verifies each body artifact against its index line (identity, metadata and
SHA-256; symbolic links and paths outside the directory are refused), and
writes the bundle to --output atomically (0600). Two exports of the same
request are byte-identical. The latest attempt is used unless --attempt
names one.

The bundle's completeness block lists sorted blockers (missing phase, URL,
body, artifact or hash, truncated or redacted request body, unterminated
upstream stream…); a bundle with blockers is written but compare refuses it.

--format text|json selects the summary printed on stdout (default text); it
includes the SHA-256 of the written file.
`,
		Example: "caddy reasoning-relay replay export --request-id rr_5f3a9c0d1e2b4a6c8d9e0f1a --logs-dir /var/lib/caddy/captures --output rr.bundle.json",
		RunE:    caddycmd.WrapCommandFuncForCobra(cmdReplayExport),
	}
	export.Flags().String("request-id", "", "request ID, as in X-Relay-Request-Id (required)")
	export.Flags().String("logs-dir", "", "capture directory, as in log_bodies (required)")
	export.Flags().StringP("output", "o", "", "bundle file to write (required)")
	export.Flags().Int("attempt", 0, "attempt to export (default: the latest)")
	export.Flags().String("format", "text", "summary format: text or json")
	cmd.AddCommand(export)

	compare := &cobra.Command{
		Use:   "compare --bundle <file> --output <file> --execute [--url <url>] [--header-env NAME=ENVVAR]... [--timeout <duration>]",
		Short: "Replay a bundle's request and compare the answer with the recorded one",
		Long: `
Sends the bundle's request again and writes a comparison to --output:
statusMatches, bodyHashMatches, jsonShapeMatches and contentTypeMatches (each
null when either side was truncated or missing), the JSON-shape differences,
and for event streams the event type sequences and each event's shape.

Nothing is sent without --execute. The endpoint is the bundle's URL, which
must then be the OpenAI Responses endpoint, unless --url authorizes another;
it must be HTTPS (plain HTTP only to loopback) without credentials, fragment
or credential-like query parameters. Redirects are not followed. Only POST,
PUT and PATCH are replayed.

Redacted headers are filled only from the environment: --header-env
Authorization=OPENAI_API_KEY sets Authorization from $OPENAI_API_KEY ("Bearer "
is added to a bare key). A redacted header without --header-env, or an unset
variable, is an error. Secrets never appear on the command line, in the
bundle or in the comparison.

--timeout bounds the exchange (1s to 10m, default 2m). At most 1 MiB of the
answer is kept; past it the read is cancelled and comparisons are null.
`,
		Example: "OPENAI_API_KEY=... caddy reasoning-relay replay compare --bundle rr.bundle.json --output rr.compare.json --execute --header-env Authorization=OPENAI_API_KEY",
		RunE:    caddycmd.WrapCommandFuncForCobra(cmdReplayCompare),
	}
	compare.Flags().String("bundle", "", "bundle file from replay export (required)")
	compare.Flags().StringP("output", "o", "", "comparison file to write (required)")
	compare.Flags().Bool("execute", false, "really send the request")
	compare.Flags().String("url", "", "endpoint to send to instead of the bundle's (authorizes it)")
	compare.Flags().StringArray("header-env", nil, "NAME=ENVVAR: fill header NAME from environment variable ENVVAR (repeatable)")
	compare.Flags().Duration("timeout", bundle.DefaultTimeout, "bound on the exchange (1s to 10m)")
	cmd.AddCommand(compare)
	return cmd
}

// cmdReplayExport implements `caddy reasoning-relay replay export`.
func cmdReplayExport(fl caddycmd.Flags) (int, error) {
	return runReplayExport(fl, os.Stdout)
}

func runReplayExport(fl caddycmd.Flags, stdout io.Writer) (int, error) {
	id, dir, output, format := fl.String("request-id"), fl.String("logs-dir"), fl.String("output"), fl.String("format")
	if id == "" || dir == "" || output == "" {
		return caddy.ExitCodeFailedStartup, errors.New("--request-id, --logs-dir and --output are required")
	}
	if format != "text" && format != "json" {
		return caddy.ExitCodeFailedStartup, fmt.Errorf("--format must be text or json")
	}
	b, err := bundle.Export(bundle.ExportOptions{RequestID: id, LogsDir: dir, Attempt: fl.Int("attempt")})
	if err != nil {
		return caddy.ExitCodeFailedStartup, errors.New(redact.Text(err.Error()))
	}
	data, err := bundle.Canonical(b)
	if err != nil {
		return caddy.ExitCodeFailedStartup, fmt.Errorf("encoding the bundle: %w", err)
	}
	sum, err := bundle.WriteFileAtomic(output, data)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	summary := map[string]any{
		"output": output, "sha256": sum, "bytes": len(data), "requestId": b.RequestID,
		"attempt": b.Attempt, "attempts": b.Attempts, "captures": len(b.Captures),
		"replayable": b.Completeness.Replayable, "blockers": b.Completeness.Blockers,
		"warnings": b.Completeness.Warnings,
	}
	if format == "json" {
		out, _ := bundle.Canonical(summary)
		_, _ = stdout.Write(out)
		return caddy.ExitCodeSuccess, nil
	}
	fmt.Fprintf(stdout, "wrote %s (%d bytes)\nsha256 %s\nrequest %s attempt %d of %v, %d captures\nreplayable: %v\n",
		output, len(data), sum, b.RequestID, b.Attempt, b.Attempts, len(b.Captures), b.Completeness.Replayable)
	if len(b.Completeness.Blockers) > 0 {
		fmt.Fprintf(stdout, "blockers: %s\n", strings.Join(b.Completeness.Blockers, ", "))
	}
	if len(b.Completeness.Warnings) > 0 {
		fmt.Fprintf(stdout, "warnings: %s\n", strings.Join(b.Completeness.Warnings, ", "))
	}
	return caddy.ExitCodeSuccess, nil
}

// cmdReplayCompare implements `caddy reasoning-relay replay compare`.
func cmdReplayCompare(fl caddycmd.Flags) (int, error) {
	return runReplayCompare(fl, os.Stdout)
}

func runReplayCompare(fl caddycmd.Flags, stdout io.Writer) (int, error) {
	bundlePath, output := fl.String("bundle"), fl.String("output")
	if bundlePath == "" || output == "" {
		return caddy.ExitCodeFailedStartup, errors.New("--bundle and --output are required")
	}
	headerEnv, err := fl.GetStringArray("header-env")
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	b, err := bundle.ReadBundle(bundlePath)
	if err != nil {
		return caddy.ExitCodeFailedStartup, errors.New(redact.Text(err.Error()))
	}
	c, err := bundle.Compare(context.Background(), b, bundle.CompareOptions{
		Execute: fl.Bool("execute"), URL: fl.String("url"), HeaderEnv: headerEnv, Timeout: fl.Duration("timeout"),
	})
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	data, err := bundle.Canonical(c)
	if err != nil {
		return caddy.ExitCodeFailedStartup, fmt.Errorf("encoding the comparison: %w", err)
	}
	sum, err := bundle.WriteFileAtomic(output, data)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	show := func(p *bool) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprint(*p)
	}
	fmt.Fprintf(stdout, "wrote %s (%d bytes)\nsha256 %s\nreplayed %s %s: status %d (recorded %d)\n",
		output, len(data), sum, c.Method, c.Endpoint, c.Replay.Status, c.Original.Status)
	fmt.Fprintf(stdout, "statusMatches %s\nbodyHashMatches %s\njsonShapeMatches %s\ncontentTypeMatches %s\n",
		show(c.StatusMatches), show(c.BodyHashMatches), show(c.JSONShapeMatches), show(c.ContentTypeMatches))
	if c.SSE != nil {
		fmt.Fprintf(stdout, "eventTypesMatch %s\neventShapesMatch %s\n", show(c.SSE.EventTypesMatch), show(c.SSE.EventShapesMatch))
	}
	if c.Replay.Error != "" {
		fmt.Fprintf(stdout, "replay error: %s\n", c.Replay.Error)
	}
	return caddy.ExitCodeSuccess, nil
}
