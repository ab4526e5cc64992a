package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

func TestAdminSnapshotOneAtATimeAndStopWaits(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "admin-snap.sqlite")
	snapDir := filepath.Join(dir, "inspection")
	cfg := map[string]any{
		"admin": map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
		"apps": map[string]any{"reasoning_cache": map[string]any{
			"database": db, "enabled": true, "snapshot_dir": snapDir,
		}},
	}
	raw, _ := json.Marshal(cfg)
	app := loadConfig(t, raw)
	st := app.holder.store
	markers := make([]ledger.Marker, 1500)
	for i := range markers {
		markers[i] = ledger.Marker{Kind: ledger.MarkerStartPoison, Digest: fmt.Sprintf("%064x", i), Reason: strings.Repeat("r", 60)}
	}
	if _, err := st.WriteMarkers(context.Background(), ledger.Scope{ID: strings.Repeat("b", 64), Model: "m"}, markers); err != nil {
		t.Fatal(err)
	}

	api := new(AdminAPI)
	if err := api.Provision(caddy.ActiveContext()); err != nil {
		t.Fatal(err)
	}
	post := func() (*httptest.ResponseRecorder, error) {
		rec := httptest.NewRecorder()
		err := api.handleSnapshot(rec, httptest.NewRequest(http.MethodPost, "/reasoning_cache/snapshot", nil))
		return rec, err
	}

	inCopy, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	testHookSnapshotStep = func(_, _ int64) { once.Do(func() { close(inCopy); <-proceed }) }
	t.Cleanup(func() { testHookSnapshotStep = nil })
	type result struct {
		rec *httptest.ResponseRecorder
		err error
	}
	first := make(chan result, 1)
	go func() {
		rec, err := post()
		first <- result{rec, err}
	}()
	<-inCopy

	// a second snapshot while the first copies is refused
	_, err := post()
	var apiErr caddy.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatus != http.StatusConflict {
		t.Fatalf("concurrent snapshot: %v, want 409", err)
	}
	// status says one is running, without waiting for it
	rec := httptest.NewRecorder()
	if err := api.handleStatus(rec, httptest.NewRequest(http.MethodGet, "/reasoning_cache/status", nil)); err != nil {
		t.Fatal(err)
	}
	var status Status
	if err := json.Unmarshal(rec.Body.Bytes(), &status); err != nil {
		t.Fatal(err)
	}
	if !status.Snapshots.Running || !status.Open || status.Ledger == nil || status.Ledger.StartPoisonMarkers.Value != 1500 {
		t.Fatalf("status during a snapshot: %+v %+v", status.Snapshots, status.Ledger)
	}
	if err := api.handleStatus(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/reasoning_cache/status", nil)); !errors.As(err, &apiErr) || apiErr.HTTPStatus != http.StatusMethodNotAllowed {
		t.Fatalf("POST status: %v", err)
	}

	// stopping Caddy waits for the copy before it closes the ledger
	stopped := make(chan error, 1)
	go func() { stopped <- caddy.Stop() }()
	select {
	case err := <-stopped:
		t.Fatalf("caddy stopped (%v) while a snapshot was copying", err)
	case r := <-first:
		t.Fatalf("the snapshot ended (%v) before it was let go", r.err)
	default:
	}
	close(proceed)
	r := <-first
	if r.err != nil {
		t.Fatalf("snapshot: %v", r.err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	var res ledger.SnapshotResult
	if err := json.Unmarshal(r.rec.Body.Bytes(), &res); err != nil || filepath.Dir(res.Path) != snapDir {
		t.Fatalf("snapshot reply %s: %v", r.rec.Body.Bytes(), err)
	}
	if fi, err := os.Stat(res.Path); err != nil || fi.Mode().Perm() != 0o400 {
		t.Fatalf("snapshot file: %v %v", fi, err)
	}
}

func TestActiveAppFollowsStartAndCleanup(t *testing.T) {
	base := activeApp.Load() // whatever an earlier test left running
	old, next := new(CacheApp), new(CacheApp)
	setActive(old)
	setActive(next)
	// the new configuration failed after its app started: back to the old
	dropActive(next)
	if activeApp.Load() != old {
		t.Fatal("a failed reload left the old configuration's app inactive")
	}
	setActive(next)
	dropActive(old) // a successful reload cleans the old one up
	if activeApp.Load() != next {
		t.Fatal("cleaning up the old configuration dropped the new app")
	}
	dropActive(next)
	if activeApp.Load() != base {
		t.Fatal("an app stays active after its cleanup")
	}
}
