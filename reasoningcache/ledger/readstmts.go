package ledger

import (
	"context"
	"database/sql"
	"sync"
)

// readStmts holds the read path's statements, prepared once on the pool:
// database/sql then prepares each on a connection the first time that
// connection runs it and reuses it afterwards, so a plan's dozen reads do
// not parse their SQL again on every request. It is safe for concurrent
// use. Statements whose SQL varies per call must not go through it.
type readStmts struct {
	db     *sql.DB
	mu     sync.Mutex
	stmts  map[string]*sql.Stmt
	closed bool
}

func newReadStmts(db *sql.DB) *readStmts {
	return &readStmts{db: db, stmts: make(map[string]*sql.Stmt)}
}

// get returns the pool statement for query, preparing it on first use;
// nil when it cannot (the caller then runs the query unprepared, which
// reports the same error).
func (r *readStmts) get(ctx context.Context, query string) *sql.Stmt {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.stmts[query]; ok || r.closed {
		return st
	}
	st, err := r.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	r.stmts[query] = st
	return st
}

// close closes every statement; later queries run unprepared.
func (r *readStmts) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for q, st := range r.stmts {
		_ = st.Close()
		delete(r.stmts, q)
	}
}

// ExecContext, QueryContext and QueryRowContext make readStmts a dbtx
// over the pool.
func (r *readStmts) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := r.get(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return r.db.ExecContext(ctx, query, args...)
}

func (r *readStmts) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := r.get(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return r.db.QueryContext(ctx, query, args...)
}

func (r *readStmts) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := r.get(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return r.db.QueryRowContext(ctx, query, args...)
}
