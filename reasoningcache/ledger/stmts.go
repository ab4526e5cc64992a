package ledger

import (
	"context"
	"database/sql"
	"fmt"
)

// stmtCache holds statements prepared once on one connection, so that the
// writer does not parse the same SQL for every operation. It is used by
// one goroutine at a time (the writer) and needs no lock.
type stmtCache struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
}

func newStmtCache(conn *sql.Conn) *stmtCache {
	return &stmtCache{conn: conn, stmts: make(map[string]*sql.Stmt)}
}

func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := c.stmts[query]; ok {
		return st, nil
	}
	st, err := c.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	c.stmts[query] = st
	return st, nil
}

func (c *stmtCache) close() {
	for q, st := range c.stmts {
		_ = st.Close()
		delete(c.stmts, q)
	}
}

// preparedTx runs every statement through a stmtCache; it is the dbtx the
// writer hands to operations.
type preparedTx struct{ c *stmtCache }

func (p preparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := p.c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (p preparedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := p.c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (p preparedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := p.c.get(ctx, query)
	if err != nil {
		// *sql.Row carries no constructor for an error; fall back to the
		// unprepared path, which reports the same error on Scan.
		return p.c.conn.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}
