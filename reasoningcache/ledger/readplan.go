package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// maxBulk bounds the keys of one bulk read (a plan is at most
// Options.MaxPlanBlocks blocks; the planner asks for two digests per block).
const maxBulk = 4096

// jsonKeys encodes keys as the JSON array the bulk reads unpack with
// json_each, so that one statement serves any number of keys.
func jsonKeys[T any](op string, keys []T) (string, error) {
	if len(keys) > maxBulk {
		return "", invalid(op, ReasonInvalidArgument, "%d keys, limit %d", len(keys), maxBulk)
	}
	if k, ok := plainKeys(keys); ok {
		return k, nil
	}
	b, err := json.Marshal(keys)
	if err != nil {
		return "", fmt.Errorf("ledger: %s: encode keys: %w", op, err)
	}
	return string(b), nil
}

// plainKeys encodes the keys the planner passes on every hit (ids and
// hex digests) without reflection: the JSON array json.Marshal would
// produce, or false for any other key (json.Marshal then encodes it).
func plainKeys[T any](keys []T) (string, bool) {
	b := make([]byte, 0, 2+len(keys)*(2+64+1))
	b = append(b, '[')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		switch k := any(k).(type) {
		case int64:
			b = strconv.AppendInt(b, k, 10)
		case string:
			for j := 0; j < len(k); j++ {
				if c := k[j]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '-') {
					return "", false
				}
			}
			b = append(append(append(b, '"'), k...), '"')
		default:
			return "", false
		}
	}
	return string(append(b, ']')), true
}

// observationsByID reads observations by id. The scope is compared with
// unary plus, which keeps SQLite from choosing an index on scope_id: with
// one, it walked every observation of the scope (hundreds of
// microseconds per plan in a long-lived scope, growing without bound)
// instead of looking the few ids up by primary key.
const observationsByID = `
	SELECT observation_id, scope_id, generation, start_digest, end_digest, envelope_fp, payload_fp,
		output_hash, intent_id, snapshot, replayable, payload_id, created_at, row_version, model_snapshot
	FROM observations
	WHERE observation_id IN (SELECT value FROM json_each(?)) AND +scope_id = ?
	ORDER BY observation_id`

// Observations returns the observations of scopeID with the given ids, in
// id order, of any generation (the caller compares Generation). Unknown
// ids and ids of other scopes are left out. Prior plans are not loaded:
// PriorPlan is nil.
func (s *Store) Observations(ctx context.Context, scopeID string, ids []int64) ([]Observation, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	if len(ids) == 0 {
		return nil, nil
	}
	keys, err := jsonKeys("observations", ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.reads.QueryContext(ctx, observationsByID, keys, scopeID)
	if err != nil {
		return nil, fmt.Errorf("ledger: observations: %w", err)
	}
	defer rows.Close()
	var out []Observation
	for rows.Next() {
		var (
			o       Observation
			payload sql.NullInt64
			created int64
		)
		if err := rows.Scan(&o.ID, &o.ScopeID, &o.Generation, &o.StartDigest, &o.EndDigest, &o.EnvelopeFP,
			&o.PayloadFP, &o.OutputHash, &o.IntentID, &o.Seq, &o.Replayable, &payload, &created,
			&o.RowVersion, &o.ModelSnapshot); err != nil {
			return nil, fmt.Errorf("ledger: observations: %w", err)
		}
		o.PayloadID = payload.Int64
		o.CreatedAt = time.UnixMilli(created)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: observations: %w", err)
	}
	return out, nil
}

// MarkersAt returns the markers (of either kind) of scopeID at any of the
// given digests.
func (s *Store) MarkersAt(ctx context.Context, scopeID string, digests []string) ([]Marker, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	if len(digests) == 0 {
		return nil, nil
	}
	keys, err := jsonKeys("markers", digests)
	if err != nil {
		return nil, err
	}
	rows, err := s.reads.QueryContext(ctx, `
		SELECT scope_id, kind, digest, reason, intent_id FROM markers
		WHERE scope_id = ? AND digest IN (SELECT value FROM json_each(?)) ORDER BY digest, kind`, scopeID, keys)
	if err != nil {
		return nil, fmt.Errorf("ledger: markers: %w", err)
	}
	defer rows.Close()
	var out []Marker
	for rows.Next() {
		var m Marker
		if err := rows.Scan(&m.ScopeID, &m.Kind, &m.Digest, &m.Reason, &m.IntentID); err != nil {
			return nil, fmt.Errorf("ledger: markers: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: markers: %w", err)
	}
	return out, nil
}

// IntentsAt returns the unresolved intents of scopeID that start at any of
// the given digests, oldest first. Plans are not loaded: Plan is nil.
func (s *Store) IntentsAt(ctx context.Context, scopeID string, startDigests []string) ([]Intent, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	if len(startDigests) == 0 {
		return nil, nil
	}
	keys, err := jsonKeys("intents", startDigests)
	if err != nil {
		return nil, err
	}
	rows, err := s.reads.QueryContext(ctx, `
		SELECT `+intentColumns+` FROM intents WHERE scope_id = ? AND start_digest IN (SELECT value FROM json_each(?))
		ORDER BY intent_id`, scopeID, keys)
	if err != nil {
		return nil, fmt.Errorf("ledger: intents: %w", err)
	}
	return s.scanIntents(rows, false)
}

// maxSnapshots bounds how many snapshots Snapshots returns.
const maxSnapshots = 64

// ModelSnapshots returns the model snapshots scopeID has observed, the most
// recently observed first (at most 64).
func (s *Store) ModelSnapshots(ctx context.Context, scopeID string) ([]ModelSnapshotSeen, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	rows, err := s.reads.QueryContext(ctx, `
		SELECT snapshot, last_seen_at, last_seq FROM scope_snapshots WHERE scope_id = ?
		ORDER BY last_seq DESC LIMIT ?`, scopeID, maxSnapshots)
	if err != nil {
		return nil, fmt.Errorf("ledger: snapshots: %w", err)
	}
	defer rows.Close()
	var out []ModelSnapshotSeen
	for rows.Next() {
		var (
			sn   ModelSnapshotSeen
			seen int64
		)
		if err := rows.Scan(&sn.Snapshot, &seen, &sn.Seq); err != nil {
			return nil, fmt.Errorf("ledger: snapshots: %w", err)
		}
		sn.LastSeen = time.UnixMilli(seen)
		out = append(out, sn)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: snapshots: %w", err)
	}
	return out, nil
}
