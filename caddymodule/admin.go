package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

func init() {
	caddy.RegisterModule(AdminAPI{})
}

// DefaultSnapshotDir is where inspection snapshots are published when the
// app sets no snapshot_dir: a private folder in the home directory of the
// user Caddy runs as.
const DefaultSnapshotDir = "~/.reasoning-relay-inspection"

// testHookSnapshotStep, when set by tests, runs between two steps of a
// snapshot copy.
var testHookSnapshotStep func(copied, total int64)

// Snapshot bookkeeping of this process.
var (
	snapshotsPublished atomic.Int64
	lastSnapshot       atomic.Pointer[string]
)

// AdminAPI is the reasoning cache's part of Caddy's admin API. Put the
// admin endpoint on a Unix socket with owner-only permissions (`admin
// unix//path/admin.sock|0600`): the routes expose conversation metadata
// and write snapshots of the ledger.
//
//   - GET /reasoning_cache/status: runtime counters since the process
//     started and the ledger's aggregates (see Status).
//   - POST /reasoning_cache/snapshot: an online, consistent copy of the
//     ledger without its secret, published owner-read-only in the app's
//     snapshot_dir; the reply names the file.
//
// It takes no configuration: Caddy mounts every admin.api module.
type AdminAPI struct {
	log *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (AdminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.reasoning_cache",
		New: func() caddy.Module { return new(AdminAPI) },
	}
}

// Provision sets up the logger. The admin server is built before the apps
// of a configuration, so the reasoning_cache app is looked up per request.
func (a *AdminAPI) Provision(ctx caddy.Context) error {
	a.log = ctx.Logger()
	return nil
}

// Routes returns the admin routes.
func (a *AdminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: "/reasoning_cache/status", Handler: caddy.AdminHandlerFunc(a.handleStatus)},
		{Pattern: "/reasoning_cache/snapshot", Handler: caddy.AdminHandlerFunc(a.handleSnapshot)},
	}
}

func (a *AdminAPI) handleStatus(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("method not allowed; use GET")}
	}
	return writeAdminJSON(w, buildStatus(r.Context()))
}

func (a *AdminAPI) handleSnapshot(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("method not allowed; use POST")}
	}
	app := activeApp.Load()
	if app == nil || app.holder == nil {
		return caddy.APIError{HTTPStatus: http.StatusConflict, Err: errors.New("the reasoning cache has no open ledger to snapshot")}
	}
	dir := app.snapshotDir()
	if dir == "" {
		return caddy.APIError{HTTPStatus: http.StatusInternalServerError, Err: errors.New("no snapshot directory: set snapshot_dir in the reasoning_cache app (the home directory is unknown)")}
	}
	// the copy finishes (and is published) even if the client goes away;
	// it is bounded by the source ceiling
	res, err := app.holder.store.Snapshot(context.WithoutCancel(r.Context()), ledger.SnapshotOptions{
		Dir: dir, FreeMargin: app.SnapshotFreeMargin, MaxSourceBytes: app.SnapshotMaxSource,
		OnStep: testHookSnapshotStep,
	})
	switch {
	case errors.Is(err, ledger.ErrSnapshotRunning):
		return caddy.APIError{HTTPStatus: http.StatusConflict, Err: errors.New("a snapshot is already being taken; try again when it has finished")}
	case errors.Is(err, ledger.ErrSnapshotTooLarge):
		return caddy.APIError{HTTPStatus: http.StatusInsufficientStorage, Err: err}
	case errors.Is(err, ledger.ErrClosed):
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: errors.New("the ledger is closing")}
	case err != nil:
		return caddy.APIError{HTTPStatus: http.StatusInternalServerError, Err: err}
	}
	snapshotsPublished.Add(1)
	lastSnapshot.Store(&res.Path)
	a.log.Info("reasoning cache snapshot published",
		zap.String("path", res.Path), zap.Int64("bytes", res.Bytes), zap.Int64("took_ms", res.TookMillis))
	return writeAdminJSON(w, res)
}

// snapshotDir is the configured snapshot directory with a leading ~
// expanded, or "" when the home directory is unknown.
func (a *CacheApp) snapshotDir() string {
	dir := a.SnapshotDir
	if dir == "" {
		dir = DefaultSnapshotDir
	}
	if dir == "~" || strings.HasPrefix(dir, "~/") {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		dir = filepath.Join(home, strings.TrimPrefix(dir, "~"))
	}
	return dir
}

func writeAdminJSON(w http.ResponseWriter, v any) error {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return caddy.APIError{HTTPStatus: http.StatusInternalServerError, Err: err}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, err = w.Write(append(body, '\n'))
	return err
}

// Interface guards
var (
	_ caddy.AdminRouter = (*AdminAPI)(nil)
	_ caddy.Provisioner = (*AdminAPI)(nil)
)
