package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The commit benchmarks compare one transaction and one fsync per
// operation (naive) with the group-commit writer, at the same durability
// (WAL, synchronous=FULL on every connection). Each operation inserts one
// marker. They report ops/s and the p50/p99 latency of one operation, from
// submit to acknowledged commit.

var benchWriters = []int{1, 16, 64}

func BenchmarkCommitNaive(b *testing.B) {
	for _, n := range benchWriters {
		b.Run(fmt.Sprintf("writers=%d", n), func(b *testing.B) {
			s := openTest(b, "", Options{})
			stmts := new(sync.Map)
			var retries atomic.Int64
			benchCommits(b, s, n, func(ctx context.Context, i int64) error {
				op := markerOp(i)
				for {
					err := s.commitDirect(ctx, stmts, op)
					if !isBusy(err) {
						return err
					}
					// Past the busy timeout: a naive caller has to retry.
					retries.Add(1)
				}
			})
			b.ReportMetric(float64(retries.Load()), "busy-retries")
		})
	}
}

func BenchmarkCommitGroup(b *testing.B) {
	for _, n := range benchWriters {
		b.Run(fmt.Sprintf("writers=%d", n), func(b *testing.B) {
			s := openTest(b, "", Options{})
			benchCommits(b, s, n, func(ctx context.Context, i int64) error {
				return s.submit(ctx, "bench", false, markerOp(i))
			})
			st := s.Stats()
			if st.Batches > 0 {
				b.ReportMetric(float64(st.Ops)/float64(st.Batches), "ops/batch")
			}
		})
	}
}

var benchScope = testScope(0)

func markerOp(i int64) applyFunc {
	d := dig("bench %d %d", time.Now().UnixNano(), i)
	return func(w *wtx) error {
		if _, err := w.ensureScope(benchScope); err != nil {
			return err
		}
		_, err := w.ExecContext(w.ctx, `INSERT INTO markers (scope_id, kind, digest, reason, created_at) VALUES (?, 'start_poison', ?, 'bench', ?)`,
			benchScope.ID, d, w.nowMs())
		return err
	}
}

// commitDirect is the naive path: a pooled connection, its own IMMEDIATE
// transaction (the DSN's _txlock) and COMMIT, so one fsync, per operation.
// Statements are prepared once per connection, as the writer's are.
func (s *Store) commitDirect(ctx context.Context, stmts *sync.Map, apply applyFunc) (err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err := apply(&wtx{dbtx: poolPreparedTx{s: s, stmts: stmts, tx: tx}, ctx: ctx, now: time.Now(), s: s}); err != nil {
		return err
	}
	return tx.Commit()
}

func isBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == 5 // SQLITE_BUSY
}

// poolPreparedTx runs statements prepared once on the pool (query ->
// *sql.Stmt in stmts) inside one transaction.
type poolPreparedTx struct {
	s     *Store
	stmts *sync.Map
	tx    *sql.Tx
}

func (p poolPreparedTx) stmt(ctx context.Context, q string) *sql.Stmt {
	st, ok := p.stmts.Load(q)
	if !ok {
		prepared, err := p.s.db.PrepareContext(ctx, q)
		if err != nil {
			return nil
		}
		var loaded bool
		if st, loaded = p.stmts.LoadOrStore(q, prepared); loaded {
			_ = prepared.Close()
		}
	}
	return p.tx.StmtContext(ctx, st.(*sql.Stmt))
}

func (p poolPreparedTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := p.stmt(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return p.tx.ExecContext(ctx, q, args...)
}

func (p poolPreparedTx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := p.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return p.tx.QueryContext(ctx, q, args...)
}

func (p poolPreparedTx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := p.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.tx.QueryRowContext(ctx, q, args...)
}

func benchCommits(b *testing.B, s *Store, writers int, op func(context.Context, int64) error) {
	ctx := context.Background()
	// Warm up outside the timer: statements get prepared (the naive path
	// prepares on the pool, which must not happen while every pooled
	// connection sits in a transaction) and the scope row exists.
	if err := op(ctx, -1); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				if err := op(ctx, i); err != nil {
					failed.Store(err)
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
}
