package ledger

import (
	"context"
	"fmt"
	"time"
)

// PayloadSet is the metadata of several payloads read with one statement;
// their outputs are loaded one by one, when asked for, so that a caller
// that stops early (a replay ceiling, a failed step) loads no more than it
// uses.
type PayloadSet struct {
	s     *Store
	metas map[int64]payloadMeta
}

type payloadMeta struct {
	p      Payload // without Output
	stored int64   // length of the stored output
}

// Payloads reads the metadata of the payloads with the given ids with one
// statement (a plan replays up to Options.MaxPlanBlocks payloads, and one
// statement each was most of the cost of planning a long conversation).
func (s *Store) Payloads(ctx context.Context, ids []int64) (*PayloadSet, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	set := &PayloadSet{s: s, metas: make(map[int64]payloadMeta, len(ids))}
	if len(ids) == 0 {
		return set, nil
	}
	keys, err := jsonKeys("payloads", ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.reads.QueryContext(ctx, `
		SELECT payload_id, fingerprint, size, length(CAST(output AS BLOB)), touched_at, row_version
		FROM payloads WHERE payload_id IN (SELECT value FROM json_each(?))`, keys)
	if err != nil {
		return nil, fmt.Errorf("ledger: payloads: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			m       payloadMeta
			touched int64
		)
		if err := rows.Scan(&m.p.ID, &m.p.Fingerprint, &m.p.Size, &m.stored, &touched, &m.p.RowVersion); err != nil {
			return nil, fmt.Errorf("ledger: payloads: %w", err)
		}
		m.p.TouchedAt = time.UnixMilli(touched)
		set.metas[m.p.ID] = m
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: payloads: %w", err)
	}
	return set, nil
}

// Payload returns the payload id of the set with its output, exactly as
// Store.Payload would (same checks, same hot cache), without reading its
// metadata again. An id the set did not find is ErrNotFound.
func (ps *PayloadSet) Payload(ctx context.Context, id int64) (*Payload, error) {
	m, ok := ps.metas[id]
	if !ok {
		return nil, fmt.Errorf("%w: payload %d", ErrNotFound, id)
	}
	if ps.s.isClosed() {
		return nil, ErrClosed
	}
	p := m.p
	if err := ps.s.loadOutput(ctx, &p, m.stored); err != nil {
		return nil, err
	}
	return &p, nil
}
