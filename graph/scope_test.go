package graph

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// matchPath is an independent, naive matcher of a glob (segments) against
// a concrete path (segments): backtracking, with "*" matched character by
// character. The overlap tests judge ScopeOverlaps against it.
func matchPath(glob, path []string) bool {
	if len(glob) == 0 {
		return len(path) == 0
	}
	if glob[0] == "**" {
		for k := 0; k <= len(path); k++ {
			if matchPath(glob[1:], path[k:]) {
				return true
			}
		}
		return false
	}
	return len(path) > 0 && matchSegment(glob[0], path[0]) && matchPath(glob[1:], path[1:])
}

func matchSegment(p, s string) bool {
	if p == "" {
		return s == ""
	}
	if p[0] == '*' {
		for k := 0; k <= len(s); k++ {
			if matchSegment(p[1:], s[k:]) {
				return true
			}
		}
		return false
	}
	return s != "" && s[0] == p[0] && matchSegment(p[1:], s[1:])
}

// smallGlobs are every glob of one or two segments drawn from segs, and
// witnesses every path of one to four segments of one or two letters of
// {a, b}: any two of these globs that overlap at all match a common path
// among the witnesses (each glob has at most two segments that consume one
// path segment, each at most two literal letters).
func smallGlobs() (globs [][]string, witnesses [][]string) {
	segs := []string{"**", "*", "a", "b", "a*", "*a", "ab", "a*b", "*a*"}
	for _, x := range segs {
		globs = append(globs, []string{x})
		for _, y := range segs {
			globs = append(globs, []string{x, y})
		}
	}
	names := []string{"a", "b", "aa", "ab", "ba", "bb"}
	var grow func(prefix []string)
	grow = func(prefix []string) {
		if len(prefix) == 4 {
			return
		}
		for _, n := range names {
			p := append(append([]string{}, prefix...), n)
			witnesses = append(witnesses, p)
			grow(p)
		}
	}
	grow(nil)
	return globs, witnesses
}

// TestScopeOverlapExhaustive compares ScopeOverlaps, for every pair of
// small globs, with a search for a common path among all small paths.
func TestScopeOverlapExhaustive(t *testing.T) {
	t.Parallel()
	globs, witnesses := smallGlobs()
	matches := make([][]bool, len(globs))
	for i, g := range globs {
		matches[i] = make([]bool, len(witnesses))
		for k, w := range witnesses {
			matches[i][k] = matchPath(g, w)
		}
	}
	for i, a := range globs {
		for j, b := range globs {
			want := false
			for k := range witnesses {
				if matches[i][k] && matches[j][k] {
					want = true
					break
				}
			}
			sa, sb := "r:"+strings.Join(a, "/"), "r:"+strings.Join(b, "/")
			if got := ScopeOverlaps(sa, sb); got != want {
				t.Fatalf("ScopeOverlaps(%q, %q) = %v, a common path exists: %v", sa, sb, got, want)
			}
		}
	}
}

// TestScopeOverlapRules checks the rules that do not depend on globs.
func TestScopeOverlapRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		a, b string
		want bool
	}{
		{"repo", "repo", true},
		{"repo", "repo:web/src/**", true},
		{"repo:web/src/**", "repo:web/src", true},
		{"repo:web/src/**", "repo:web/src/a/b.go", true},
		{"repo:web/src/**", "repo:web/docs/**", false},
		{"repo:web/*.go", "repo:web/main.go", true},
		{"repo:web/*.go", "repo:web/sub/main.go", false},
		{"repo:**/*.go", "repo:web/*_test.go", true},
		{"repo:**/*.md", "repo:web/*.go", false},
		{"repo:web", "db:web", false},
		{"db:schema", "db", true},
		{"db:schema", "db:data", false},
	}
	for _, c := range cases {
		if got := ScopeOverlaps(c.a, c.b); got != c.want {
			t.Errorf("ScopeOverlaps(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := ScopeOverlaps(c.b, c.a); got != c.want {
			t.Errorf("ScopeOverlaps(%q, %q) = %v, want %v (symmetry)", c.b, c.a, got, c.want)
		}
	}
}

// randomGlob generalises a concrete path into a glob that matches it:
// segments become "*", lose letters to "*", and runs of segments become
// "**"; so two globs made from one path always overlap.
func randomGlob(r *rand.Rand, path []string) []string {
	var out []string
	for i := 0; i < len(path); i++ {
		switch r.Intn(5) {
		case 0:
			out = append(out, "**")
			i += r.Intn(len(path) - i) // swallow some segments (maybe none past this one)
			if r.Intn(2) == 0 {
				i-- // or none at all: this segment is matched again below
			}
		case 1:
			out = append(out, "*")
		case 2:
			s := path[i]
			a, b := r.Intn(len(s)+1), r.Intn(len(s)+1)
			if a > b {
				a, b = b, a
			}
			out = append(out, s[:a]+"*"+s[b:])
		default:
			out = append(out, path[i])
		}
	}
	if len(out) == 0 || (len(out) > 0 && out[len(out)-1] == "**" && r.Intn(2) == 0) {
		out = append(out, "**")
	}
	return out
}

func randomPath(r *rand.Rand) []string {
	n := 1 + r.Intn(6)
	p := make([]string, n)
	for i := range p {
		b := make([]byte, 1+r.Intn(5))
		for k := range b {
			b[k] = "abc._-"[r.Intn(6)]
		}
		p[i] = string(b)
		if p[i] == "." || p[i] == ".." {
			p[i] = "x"
		}
	}
	return p
}

// TestScopeOverlapProperty: random globs generalised from one random path
// match it (checked by the naive matcher) and therefore overlap; globs
// that disagree on a literal first segment never do; overlap is symmetric.
func TestScopeOverlapProperty(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(19))
	for n := 0; n < 20000; n++ {
		path := randomPath(r)
		a, b := randomGlob(r, path), randomGlob(r, path)
		if !matchPath(a, path) || !matchPath(b, path) {
			t.Fatalf("generator: %v or %v does not match %v", a, b, path)
		}
		sa, sb := "r:"+strings.Join(a, "/"), "r:"+strings.Join(b, "/")
		if !ScopeOverlaps(sa, sb) || !ScopeOverlaps(sb, sa) {
			t.Fatalf("ScopeOverlaps(%q, %q) = false; both match %v", sa, sb, path)
		}
		c := randomGlob(r, randomPath(r))
		sc := "r:" + strings.Join(c, "/")
		if ScopeOverlaps(sa, sc) != ScopeOverlaps(sc, sa) {
			t.Fatalf("ScopeOverlaps(%q, %q) is not symmetric", sa, sc)
		}
		if !strings.Contains(a[0], "*") && !strings.Contains(c[0], "*") && a[0] != c[0] && ScopeOverlaps(sa, sc) {
			t.Fatalf("ScopeOverlaps(%q, %q) = true; their first segments differ", sa, sc)
		}
	}
}

// FuzzScopeOverlap: for any two valid scopes and any path, a path both
// globs match means they overlap; overlap is symmetric.
func FuzzScopeOverlap(f *testing.F) {
	f.Add("r:web/src/**", "r:**/*.go", "web/src/main.go")
	f.Add("r:a*b/*", "r:*b/**", "ab/c")
	f.Fuzz(func(t *testing.T, a, b, path string) {
		if _, err := CleanScopes("a", []string{a, b}); err != nil || checkScope("r:"+path) != "" {
			return
		}
		if ScopeOverlaps(a, b) != ScopeOverlaps(b, a) {
			t.Fatalf("not symmetric: %q %q", a, b)
		}
		ra, pa, okA := strings.Cut(a, ":")
		rb, pb, okB := strings.Cut(b, ":")
		if !okA || !okB || ra != rb {
			return
		}
		p := strings.Split(path, "/")
		if matchPath(strings.Split(pa, "/"), p) && matchPath(strings.Split(pb, "/"), p) && !ScopeOverlaps(a, b) {
			t.Fatalf("ScopeOverlaps(%q, %q) = false; both match %q", a, b, path)
		}
	})
}

// TestScopeOverlapSQL: the claim's SQL rule (wg_scopes_overlap) agrees
// with ScopeOverlaps on every pair of small globs and on random ones.
func TestScopeOverlapSQL(t *testing.T) {
	t.Parallel()
	tx := dbtest.TestTx(t)
	globs, _ := smallGlobs()
	var as, bs []string
	for _, a := range globs {
		for _, b := range globs {
			as, bs = append(as, "r:"+strings.Join(a, "/")), append(bs, "r:"+strings.Join(b, "/"))
		}
	}
	r := rand.New(rand.NewSource(7))
	for n := 0; n < 3000; n++ {
		a, b := randomGlob(r, randomPath(r)), randomGlob(r, randomPath(r))
		as, bs = append(as, "r:"+strings.Join(a, "/")), append(bs, "r:"+strings.Join(b, "/"))
	}
	as, bs = append(as, "r", "r", "s:x", "r_1:a_b*"), append(bs, "r:x/**", "s", "r:x", "r_1:aXb")
	rows, err := tx.Query(context.Background(),
		`SELECT wg_scopes_overlap(ARRAY[a], ARRAY[b]) FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(a, b, n) ORDER BY n`, as, bs)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	k := 0
	for rows.Next() {
		var got bool
		if err := rows.Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := ScopeOverlaps(as[k], bs[k]); got != want {
			t.Fatalf("wg_scopes_overlap(%q, %q) = %v, ScopeOverlaps says %v", as[k], bs[k], got, want)
		}
		k++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if k != len(as) {
		t.Fatalf("%d rows, want %d", k, len(as))
	}
}

func TestCleanScopes(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		got, err := CleanScopes("touches", []string{"repo:web/src/**", "db:schema", "db", "repo:web/src/**"})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, " ") != "repo:web/src/** db:schema db" {
			t.Fatalf("got %v", got)
		}
	})
	for _, bad := range []string{"", ":x", "repo:", "repo:/a", "repo:a//b", "repo:a/", "repo:a/../b",
		"repo:a**", "re po", "repo:a b", "repo:a:b", strings.Repeat("r", 65), "repo:" + strings.Repeat("a", 200)} {
		t.Run("ErrInvalid", func(t *testing.T) {
			_, err := CleanScopes("touches", []string{bad})
			if wgerr.CodeOf(err) != wgerr.CodeInvalid {
				t.Fatalf("CleanScopes(%q) = %v, want invalid_argument", bad, err)
			}
		})
	}
}

// TestCleanScopesBoundsSegments: an item's scopes have at most
// MaxScopeSegments path segments in all, so that no item makes every claim
// of its project spend seconds comparing globs (wg_scopes_overlap costs
// the product of two globs' segments, for every pair of scopes). A
// duplicate is counted once; scopes without a path count nothing.
func TestCleanScopesBoundsSegments(t *testing.T) {
	t.Parallel()
	deep := func(tag string) string { return "r:" + strings.Repeat("**/", 64) + tag }
	t.Run("ErrTooManySegments", func(t *testing.T) {
		var bomb []string
		for i := 0; i < MaxScopes; i++ {
			bomb = append(bomb, deep(fmt.Sprintf("a%d", i)))
		}
		for _, scopes := range [][]string{
			bomb,
			{deep("a"), "r:x"},
			{"r:" + strings.Repeat("a/", MaxScopeSegments) + "b"},
		} {
			_, err := CleanScopes("touches", scopes)
			var we *wgerr.Error
			if !errors.As(err, &we) || we.Code != wgerr.CodeInvalid || we.Field != "touches" {
				t.Fatalf("CleanScopes(%d scopes, %d chars in the first) = %v, want invalid_argument on touches",
					len(scopes), len(scopes[0]), err)
			}
		}
	})
	t.Run("OK", func(t *testing.T) {
		full := []string{"r:" + strings.Repeat("a/", MaxScopeSegments-2) + "b", "r:c", "s", "t"}
		full = append(full, full[0]) // a duplicate counts once
		if _, err := CleanScopes("touches", full); err != nil {
			t.Fatalf("%d segments in all: %v", MaxScopeSegments, err)
		}
	})
}

// TestScopeKeysFindEveryOverlap: the claim reads only the live leases whose
// scope keys (wg_scope_keys) meet the candidate's probe (wg_scope_probe,
// migration 00041), so for every pair of overlapping scopes the probe of
// one must meet the keys of the other; and the keys must sort the scopes
// of a resource by literal first segment (two such scopes that differ
// there are never tested exactly).
func TestScopeKeysFindEveryOverlap(t *testing.T) {
	t.Parallel()
	tx := dbtest.TestTx(t)
	globs, _ := smallGlobs()
	scopes := []string{"r", "s", "s:a", "r_1:a_b*"}
	for _, g := range globs {
		scopes = append(scopes, "r:"+strings.Join(g, "/"))
	}
	var as, bs []string
	for _, a := range scopes {
		for _, b := range scopes {
			as, bs = append(as, a), append(bs, b)
		}
	}
	rows, err := tx.Query(context.Background(),
		`SELECT wg_scope_keys(ARRAY[a]) && wg_scope_probe(ARRAY[b])
		 FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(a, b, n) ORDER BY n`, as, bs)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	k, skipped := 0, 0
	for rows.Next() {
		var met bool
		if err := rows.Scan(&met); err != nil {
			t.Fatal(err)
		}
		if ScopeOverlaps(as[k], bs[k]) && !met {
			t.Fatalf("%q and %q overlap, but the probe of %q misses the keys of %q", as[k], bs[k], bs[k], as[k])
		}
		if !met {
			skipped++
		}
		if literalFirst(as[k]) != "" && literalFirst(bs[k]) != "" && literalFirst(as[k]) != literalFirst(bs[k]) && met {
			t.Errorf("%q and %q differ in their literal first segments, yet the probe meets the keys", as[k], bs[k])
		}
		k++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if k != len(as) {
		t.Fatalf("%d rows, want %d", k, len(as))
	}
	t.Logf("%d pairs, %d left out by the keys", k, skipped)
}

// literalFirst is the scope's resource and literal first path segment
// ("r:a"), or "" when it has no path or its first segment holds a "*".
func literalFirst(scope string) string {
	res, path, ok := strings.Cut(scope, ":")
	first, _, _ := strings.Cut(path, "/")
	if !ok || strings.Contains(first, "*") {
		return ""
	}
	return res + ":" + first
}

// TestScopeKeysOfSeveralScopes: the scope keys, probe and resources of a
// lease or item holding several scopes are each scope's, sorted and
// distinct, as the definitions of migration 00041 (written out here as
// queries) gave them; the plpgsql versions of migration 00044 must answer
// the same, because replicas of either version read the other's keys.
func TestScopeKeysOfSeveralScopes(t *testing.T) {
	t.Parallel()
	tx := dbtest.TestTx(t)
	sets := [][]string{
		{}, {"r"}, {"r", "r"}, {"r:a/**", "r:a/b", "r"}, {"db:schema", "repo:web/**", "cache", "repo:api/*.go"},
		{"repo:*/src/**", "repo:web/x", "db"}, {"z:**", "a:b", "m:c*/d", "a:b/c"}, {"r_1:a_b*", "r:x"},
	}
	for _, s := range sets {
		var keys, probe, res bool
		err := tx.QueryRow(context.Background(), `
			WITH f AS (SELECT x, split_part(x, ':', 1) AS res,
			                  CASE WHEN strpos(x, ':') = 0
			                         OR strpos(split_part(substr(x, strpos(x, ':') + 1), '/', 1), '*') > 0 THEN '*'
			                       ELSE split_part(substr(x, strpos(x, ':') + 1), '/', 1) END AS first
			           FROM unnest($1::text[]) AS x)
			SELECT wg_scope_keys($1) = (SELECT coalesce(array_agg(DISTINCT k ORDER BY k), '{}')
			                            FROM f, LATERAL (VALUES (f.res), (f.res || ':' || f.first)) AS k(k)),
			       wg_scope_probe($1) = (SELECT coalesce(array_agg(DISTINCT k ORDER BY k), '{}')
			                             FROM f, LATERAL (VALUES (CASE WHEN f.first = '*' THEN f.res ELSE f.res || ':' || f.first END),
			                                                     (CASE WHEN f.first = '*' THEN NULL ELSE f.res || ':*' END)) AS k(k)
			                             WHERE k IS NOT NULL),
			       wg_scope_resources($1) = (SELECT coalesce(array_agg(DISTINCT res ORDER BY res), '{}') FROM f)`,
			s).Scan(&keys, &probe, &res)
		if err != nil {
			t.Fatal(err)
		}
		if !keys || !probe || !res {
			t.Errorf("scopes %q: keys %v, probe %v, resources %v as migration 00041 computed them", s, keys, probe, res)
		}
	}
}

// TestScopeKeysHaveNoPendingList: a lease granted with scopes writes its
// keys into leases_live_scope_keys itself, not into GIN's pending list,
// which every search of the index (each scoped claim candidate's overlap
// test) reads in full until a vacuum merges it: 5,641 entries in 34 pages
// in workload 14, about 1.1 ms a search (migration 00050).
func TestScopeKeysHaveNoPendingList(t *testing.T) {
	t.Parallel()
	tx := dbtest.TestTx(t)
	ctx := context.Background()
	var project uuid.UUID
	if err := tx.QueryRow(ctx, `INSERT INTO projects (name) VALUES ('pending-' || gen_random_uuid()) RETURNING id`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	// 300 items held by live leases, each holding a scope of its own.
	if _, err := tx.Exec(ctx, `
		INSERT INTO items (project_id, id, title, created_by, active_lease_id, epoch)
		SELECT $1, gen_random_uuid(), 'scoped ' || g, 'test', gen_random_uuid(), 1 FROM generate_series(1, 300) AS g`,
		project); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO leases (project_id, id, item_id, epoch, worker, principal, acquired_at, expires_at,
		                    scopes, scope_resources, scope_keys)
		SELECT i.project_id, i.active_lease_id, i.id, 1, 'w', 'test', now(), now() + interval '1 hour',
		       ARRAY['repo:p' || i.seq || '/**'], ARRAY['repo'], wg_scope_keys(ARRAY['repo:p' || i.seq || '/**'])
		FROM items i WHERE i.project_id = $1`, project); err != nil {
		t.Fatal(err)
	}
	// The pages the cleanup moved from the pending list into the index.
	var pending int64
	if err := tx.QueryRow(ctx, `SELECT gin_clean_pending_list('leases_live_scope_keys'::regclass)`).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending != 0 {
		t.Errorf("300 scoped leases left %d pages in the pending list of leases_live_scope_keys, which every overlap test reads", pending)
	}
}

// TestScopeHelpersArePlannedOnce: the functions a scoped claim calls for
// each candidate and grant are plpgsql (whose statements the session
// keeps planned) or SQL that the planner inlines. A SQL function it does
// not inline is parsed and planned again by every statement that calls it:
// that was most of the scoped claim's extra cost (docs/benchmarks.md,
// workload 14).
func TestScopeHelpersArePlannedOnce(t *testing.T) {
	t.Parallel()
	tx := dbtest.TestTx(t)
	ctx := context.Background()
	for _, call := range []string{
		"wg_scope_first(x)", "wg_scope_keys(ARRAY[x])", "wg_scope_probe(ARRAY[x])", "wg_scope_resources(ARRAY[x])",
		"wg_scopes_overlap(ARRAY[x], ARRAY[x])", "wg_scope_holder(gen_random_uuid(), NULL, ARRAY[x], now())",
		"wg_paths_overlap(ARRAY[x], ARRAY[x])", "wg_segments_overlap(x, x)",
	} {
		name, _, _ := strings.Cut(call, "(")
		var lang string
		if err := tx.QueryRow(ctx, `SELECT l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
			WHERE p.proname = $1`, name).Scan(&lang); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if lang == "plpgsql" {
			continue
		}
		// A SQL function: its call must not survive planning.
		var plan strings.Builder
		rows, err := tx.Query(ctx, "EXPLAIN (VERBOSE) SELECT "+call+" FROM (VALUES ('r:a/b'), ('r')) AS v(x)")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(plan.String(), name+"(") {
			t.Errorf("%s is a SQL function the planner does not inline (so every call parses and plans it):\n%s", name, plan.String())
		}
	}
}
