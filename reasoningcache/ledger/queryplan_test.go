package ledger

import (
	"context"
	"strings"
	"testing"
)

// queryPlan returns SQLite's EXPLAIN QUERY PLAN of query with args, one
// detail line per step.
func queryPlan(t *testing.T, s *Store, query string, args ...any) []string {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPlanReadsUseTheirKeys holds the planner's per-hit reads to the
// access paths that keep them independent of how much a scope has
// recorded: a read by ids must look each id up by primary key, not walk
// an index of the whole scope (Observations did: its time grew with
// every observation the scope had ever committed).
func TestPlanReadsUseTheirKeys(t *testing.T) {
	s := openTest(t, "", Options{})
	sc := testScope(1)
	for i := range 3 {
		storeTurn(t, s, sc, 1, dig("s%d", i), dig("e%d", i), nil)
	}
	cases := []struct {
		name  string
		query string
		args  []any
		want  string // a step that must appear
	}{
		{"observations", observationsByID, []any{`[1,2]`, sc.ID}, "SEARCH observations USING INTEGER PRIMARY KEY"},
		{"plan state", planStateQuery, []any{sc.ID, dig("e1"), 4, `["a"]`, 64},
			"SEARCH o USING COVERING INDEX observations_end (scope_id=? AND end_digest=? AND generation=?)"},
		{"memo by id", memoByID, []any{1 << 20, `[1,2]`}, "SEARCH o USING INTEGER PRIMARY KEY"},
		{"memo chain", memoChain, []any{1 << 20, 1, 257}, "SEARCH o USING INTEGER PRIMARY KEY"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			steps := queryPlan(t, s, c.query, c.args...)
			joined := strings.Join(steps, "\n")
			if !strings.Contains(joined, c.want) {
				t.Fatalf("query plan\n%s\nwants %q", joined, c.want)
			}
			for _, st := range steps {
				if scansATable(st) {
					t.Fatalf("query plan scans a table: %q", st)
				}
			}
		})
	}
}

// scansATable reports whether a query plan step walks a whole table or
// index; scans of the keys (json_each), of subqueries, of the recursive
// walk's queue and of constant rows are bounded by the keys.
func scansATable(step string) bool {
	rest, ok := strings.CutPrefix(step, "SCAN ")
	if !ok {
		return false
	}
	for _, bounded := range []string{"json_each", "(subquery-", "up", "CONSTANT ROW"} {
		if strings.HasPrefix(rest, bounded) {
			return false
		}
	}
	return true
}
