package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

func init() {
	cliCommands = append(cliCommands, backupCommand, restoreCommand)
}

// copyHelp is what backup and restore have in common.
const copyHelp = `
The relay must be stopped: the command takes the ledger's ownership lock
and refuses a database a running Caddy holds. It never overwrites: the
destination must not exist. Until the copy, its integrity check and its
metadata are on disk, a <destination>.blocked file keeps any relay from
opening it. A copy that fails is removed; one that was killed stays blocked (delete the
destination and its .blocked file, then run the command again).

The copy keeps the cache secret and records a coverage gap. The first time
a relay opens it with the cache enabled, every scope's generation advances:
nothing recorded before the copy is replayed again (the relay cannot know
what happened between the copy and its use); markers stay in force, and
payloads stay until retention removes them. New turns are recorded and
replayed as usual. The copy holds conversation text and reasoning
ciphertext: keep it as private as the ledger.
`

func backupCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backup --database <ledger> --output <new file> [--json]",
		Short: "Copy a stopped relay's ledger into a new recovery backup",
		Long: `
Copies the ledger of a stopped relay (--database, the reasoning_cache app's
database) into the new file --output with SQLite's backup API.
` + copyHelp,
		Example: "caddy reasoning-relay backup --database ./data/reasoning-cache.sqlite --output /backups/relay-2026-12-03.sqlite",
		RunE:    caddycmd.WrapCommandFuncForCobra(cmdBackup),
	}
	cmd.Flags().String("database", "", "the ledger to back up (required)")
	cmd.Flags().StringP("output", "o", "", "the new backup file (required; must not exist)")
	cmd.Flags().Bool("json", false, "print the result as JSON")
	return cmd
}

func restoreCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restore --backup <file> --database <new ledger> [--json]",
		Short: "Restore a backup into a new ledger for a stopped relay",
		Long: `
Copies a backup made by 'caddy reasoning-relay backup' into the new ledger
--database, which must not exist; then point the reasoning_cache app's
database at it (or move the old ledger and its -wal, -shm and -lock files
away first) and start the relay.
` + copyHelp,
		Example: "caddy reasoning-relay restore --backup /backups/relay-2026-12-03.sqlite --database ./data/reasoning-cache.sqlite",
		RunE:    caddycmd.WrapCommandFuncForCobra(cmdRestore),
	}
	cmd.Flags().String("backup", "", "the backup to restore (required)")
	cmd.Flags().String("database", "", "the new ledger to create (required; must not exist)")
	cmd.Flags().Bool("json", false, "print the result as JSON")
	return cmd
}

func cmdBackup(fl caddycmd.Flags) (int, error) {
	db, out := fl.String("database"), fl.String("output")
	if db == "" || out == "" {
		return caddy.ExitCodeFailedStartup, errors.New("--database and --output are required")
	}
	res, err := ledger.Backup(db, out)
	return printCopy(os.Stdout, "backup", res, err, fl.Bool("json"))
}

func cmdRestore(fl caddycmd.Flags) (int, error) {
	backup, db := fl.String("backup"), fl.String("database")
	if backup == "" || db == "" {
		return caddy.ExitCodeFailedStartup, errors.New("--backup and --database are required")
	}
	res, err := ledger.Restore(backup, db)
	return printCopy(os.Stdout, "restore", res, err, fl.Bool("json"))
}

func printCopy(w io.Writer, op string, res ledger.CopyResult, err error, asJSON bool) (int, error) {
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	if asJSON {
		out, err := json.Marshal(res)
		if err != nil {
			return caddy.ExitCodeFailedStartup, err
		}
		_, err = fmt.Fprintf(w, "%s\n", out)
		return caddy.ExitCodeSuccess, err
	}
	_, err = fmt.Fprintf(w, "%s: wrote %s (%s, %d pages, format %d) from %s in %d ms\ncoverage gap recorded: the first enabled start on it quarantines everything recorded before the copy\n",
		op, res.Destination, humanize.IBytes(uint64(max(res.Bytes, 0))), res.Pages, res.FormatVersion, res.Source, res.TookMillis)
	return caddy.ExitCodeSuccess, err
}
