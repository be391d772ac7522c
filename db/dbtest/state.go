package dbtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// templateState is what a reused database must match, or be brought back
// to, to be the template's copy again (reset). It is taken from the
// template once, when the template is built, and kept as the template
// database's comment (a shared catalog, readable from any connection), so
// that a test binary reads it without connecting to the template (a
// session on the template makes CREATE DATABASE from it fail).
type templateState struct {
	// Version is stateVersion when the state was taken; another is taken
	// again (the queries below changed).
	Version int `json:"v"`
	// Schema is the digest of the schema's catalog rows (schemaQuery).
	Schema string `json:"schema"`
	// Empty are the tables that hold no row in the template: reset
	// empties them.
	Empty []string `json:"empty"`
	// Seeded are the tables the migrations fill (goose's version table),
	// each with the digest of its rows: reset keeps them, and a database
	// whose rows differ is not reused.
	Seeded map[string]string `json:"seeded"`
	// Sequences are every sequence's state, which reset restores.
	Sequences []sequenceState `json:"sequences"`
	// Relations are the planner's size estimates of every relation of the
	// database's own (pg_class's relpages, reltuples, relallvisible),
	// which reset restores: VACUUM and ANALYZE rewrite them, and an empty
	// table never vacuumed (reltuples -1) is planned as if it had 10
	// pages, a vacuumed one as what it has.
	Relations []relationState `json:"relations"`
	// Size is the template's size in bytes (pg_database_size).
	Size int64 `json:"size"`
}

type relationState struct {
	OID        uint32  `json:"oid"`
	Pages      int32   `json:"pages"`
	Tuples     float32 `json:"tuples"`
	AllVisible int32   `json:"allvisible"`
}

type sequenceState struct {
	Name   string `json:"name"`
	Last   int64  `json:"last"`
	Called bool   `json:"called"`
}

const stateVersion = 2

// schemaQuery digests every catalog row of the database's own objects
// (OIDs from 16384, FirstNormalObjectId, up): tables, columns, defaults,
// constraints, indexes, triggers (enabled or not), functions, types,
// extensions, rules, policies, sequences' definitions, statistics objects,
// grants. A copy of the template has the same rows (CREATE DATABASE copies
// them, OIDs included); a test that changed the schema (migrated down,
// created a table, altered one's options, replaced a function, left a
// trigger disabled) changes them. pg_class's columns that TRUNCATE,
// VACUUM and ANALYZE rewrite (the file, its size, the row estimate,
// frozen xids) are left out: they describe the data, which reset empties.
const schemaQuery = `SELECT md5(string_agg(r, E'\n' ORDER BY r)) FROM (
  SELECT 'pg_namespace ' || to_jsonb(x)::text AS r FROM pg_namespace x WHERE oid >= 16384
  UNION ALL SELECT 'pg_class ' || (to_jsonb(x) - '{relfilenode,relpages,reltuples,relallvisible,relfrozenxid,relminmxid}'::text[])::text FROM pg_class x WHERE oid >= 16384
  UNION ALL SELECT 'pg_attribute ' || to_jsonb(x)::text FROM pg_attribute x WHERE attrelid >= 16384 AND attnum > 0
  UNION ALL SELECT 'pg_attrdef ' || to_jsonb(x)::text FROM pg_attrdef x WHERE oid >= 16384
  UNION ALL SELECT 'pg_constraint ' || to_jsonb(x)::text FROM pg_constraint x WHERE oid >= 16384
  UNION ALL SELECT 'pg_index ' || to_jsonb(x)::text FROM pg_index x WHERE indexrelid >= 16384
  UNION ALL SELECT 'pg_trigger ' || to_jsonb(x)::text FROM pg_trigger x WHERE oid >= 16384
  UNION ALL SELECT 'pg_proc ' || to_jsonb(x)::text FROM pg_proc x WHERE oid >= 16384
  UNION ALL SELECT 'pg_type ' || to_jsonb(x)::text FROM pg_type x WHERE oid >= 16384
  UNION ALL SELECT 'pg_extension ' || to_jsonb(x)::text FROM pg_extension x WHERE oid >= 16384
  UNION ALL SELECT 'pg_policy ' || to_jsonb(x)::text FROM pg_policy x WHERE oid >= 16384
  UNION ALL SELECT 'pg_rewrite ' || to_jsonb(x)::text FROM pg_rewrite x WHERE oid >= 16384
  UNION ALL SELECT 'pg_event_trigger ' || to_jsonb(x)::text FROM pg_event_trigger x WHERE oid >= 16384
  UNION ALL SELECT 'pg_sequence ' || to_jsonb(x)::text FROM pg_sequence x WHERE seqrelid >= 16384
  UNION ALL SELECT 'pg_operator ' || to_jsonb(x)::text FROM pg_operator x WHERE oid >= 16384
  UNION ALL SELECT 'pg_statistic_ext ' || to_jsonb(x)::text FROM pg_statistic_ext x WHERE oid >= 16384
  UNION ALL SELECT 'pg_largeobject_metadata ' || to_jsonb(x)::text FROM pg_largeobject_metadata x
  UNION ALL SELECT 'pg_publication ' || to_jsonb(x)::text FROM pg_publication x
  UNION ALL SELECT 'pg_default_acl ' || to_jsonb(x)::text FROM pg_default_acl x
) f`

// takeState reads the template's state from conn, a session on the
// template (or on the database about to become it).
func takeState(ctx context.Context, conn *pgx.Conn) (*templateState, error) {
	st := &templateState{Version: stateVersion, Seeded: map[string]string{}}
	if err := conn.QueryRow(ctx, schemaQuery).Scan(&st.Schema); err != nil {
		return nil, fmt.Errorf("schema digest: %w", err)
	}
	tables, err := queryStrings(ctx, conn, `SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid >= 16384 AND c.relkind IN ('r', 'p') AND n.nspname <> 'pg_toast' ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	for _, table := range tables {
		var seeded bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM "+table+")").Scan(&seeded); err != nil {
			return nil, err
		}
		if !seeded {
			st.Empty = append(st.Empty, table)
			continue
		}
		digest, err := rowsDigest(ctx, conn, []string{table})
		if err != nil {
			return nil, err
		}
		st.Seeded[table] = digest[table]
	}
	seqs, err := queryStrings(ctx, conn, `SELECT format('%I.%I', schemaname, sequencename) FROM pg_sequences ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	for _, seq := range seqs {
		s := sequenceState{Name: seq}
		if err := conn.QueryRow(ctx, "SELECT last_value, is_called FROM "+seq).Scan(&s.Last, &s.Called); err != nil {
			return nil, err
		}
		st.Sequences = append(st.Sequences, s)
	}
	rows, err := conn.Query(ctx, `SELECT oid, relpages, reltuples, relallvisible FROM pg_class
		WHERE oid >= 16384 AND relkind IN ('r', 'p', 'i', 't', 'm') ORDER BY oid`)
	if err != nil {
		return nil, err
	}
	st.Relations, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (relationState, error) {
		var r relationState
		err := row.Scan(&r.OID, &r.Pages, &r.Tuples, &r.AllVisible)
		return r, err
	})
	if err != nil {
		return nil, err
	}
	if err := conn.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&st.Size); err != nil {
		return nil, err
	}
	return st, nil
}

// rowsDigest returns the digest of each table's rows (their text, in
// order).
func rowsDigest(ctx context.Context, conn *pgx.Conn, tables []string) (map[string]string, error) {
	digests := make(map[string]string, len(tables))
	for _, table := range tables {
		var rows []string
		r, err := conn.Query(ctx, "SELECT t::text FROM "+table+" t ORDER BY 1")
		if err != nil {
			return nil, err
		}
		rows, err = pgx.CollectRows(r, pgx.RowTo[string])
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256([]byte(strings.Join(rows, "\n")))
		digests[table] = hex.EncodeToString(sum[:])
	}
	return digests, nil
}

// seededTables returns the names of st's seeded tables, sorted.
func (st *templateState) seededTables() []string {
	names := make([]string, 0, len(st.Seeded))
	for name := range st.Seeded {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// emptySQL is the statement, several in one, that empties the tables
// the template holds no row in: TRUNCATE (all of them: their foreign keys
// tie them together) when truncate, else DELETE of those of dirty. The
// session must run with session_replication_role = replica: the history
// tables' BEFORE TRUNCATE and DELETE triggers forbid it otherwise (and
// the foreign keys' triggers need not check rows that all go).
func (st *templateState) emptySQL(truncate bool, dirty []string) string {
	if truncate {
		return fmt.Sprintf("TRUNCATE %s;\n", strings.Join(st.Empty, ", "))
	}
	var b strings.Builder
	for _, table := range dirty {
		fmt.Fprintf(&b, "DELETE FROM %s;\n", table)
	}
	return b.String()
}

// restoreSQL is the statement, several in one, that restores what
// emptying and the test left of the data's traces: every sequence's
// state, the planner's size estimates (which VACUUM and ANALYZE rewrite)
// and no planner statistics (ANALYZE's).
func (st *templateState) restoreSQL() string {
	var b strings.Builder
	if len(st.Sequences) > 0 {
		sets := make([]string, len(st.Sequences))
		for i, s := range st.Sequences {
			sets[i] = fmt.Sprintf("setval(%s, %d, %t)", quoteLiteral(s.Name), s.Last, s.Called)
		}
		fmt.Fprintf(&b, "SELECT %s;\n", strings.Join(sets, ", "))
	}
	if len(st.Relations) > 0 {
		values := make([]string, len(st.Relations))
		for i, r := range st.Relations {
			values[i] = fmt.Sprintf("(%d::oid, %d, %g::real, %d)", r.OID, r.Pages, r.Tuples, r.AllVisible)
		}
		fmt.Fprintf(&b, `UPDATE pg_class c SET relpages = v.pages, reltuples = v.tuples, relallvisible = v.allvisible
FROM (VALUES %s) v(oid, pages, tuples, allvisible)
WHERE c.oid = v.oid AND (c.relpages, c.reltuples, c.relallvisible) IS DISTINCT FROM (v.pages, v.tuples, v.allvisible);
`, strings.Join(values, ", "))
	}
	b.WriteString("DELETE FROM pg_statistic WHERE starelid >= 16384;\n")
	b.WriteString("DELETE FROM pg_statistic_ext_data WHERE stxoid >= 16384;\n")
	return b.String()
}

func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// marshal and parseState keep the state as the template's comment.
func (st *templateState) marshal() string {
	b, err := json.Marshal(st)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func parseState(comment string) *templateState {
	var st templateState
	if comment == "" || json.Unmarshal([]byte(comment), &st) != nil || st.Version != stateVersion {
		return nil
	}
	return &st
}

// queryStrings runs a query of one text column and returns its values.
func queryStrings(ctx context.Context, conn *pgx.Conn, sql string, args ...any) ([]string, error) {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
