package db_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestUUIDs: the pool's connections send uuid.UUID in the binary format
// (not through its string Valuer) and read uuids back into uuid.UUID,
// *uuid.UUID (NULL included) and []uuid.UUID.
func TestUUIDs(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := context.Background()
	a, b := uuid.New(), uuid.New()

	t.Run("BinaryPlan", func(t *testing.T) {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		m := conn.Conn().TypeMap()
		for _, v := range []any{a, &a} {
			if got := fmt.Sprintf("%T", m.PlanEncode(pgtype.UUIDOID, pgtype.BinaryFormatCode, v)); !strings.Contains(got, "uuidEncodePlan") {
				t.Errorf("%T is encoded by %s", v, got)
			}
		}
	})
	t.Run("RoundTrip", func(t *testing.T) {
		var got uuid.UUID
		var text string
		if err := pool.QueryRow(ctx, "SELECT $1::uuid, $1::uuid::text", a).Scan(&got, &text); err != nil {
			t.Fatal(err)
		}
		if got != a || text != a.String() {
			t.Errorf("got %v (%s), sent %v", got, text, a)
		}
	})
	t.Run("Nullable", func(t *testing.T) {
		var some, none *uuid.UUID
		if err := pool.QueryRow(ctx, "SELECT $1::uuid, $2::uuid", &a, none).Scan(&some, &none); err != nil {
			t.Fatal(err)
		}
		if some == nil || *some != a || none != nil {
			t.Errorf("got %v, %v; want %v, nil", some, none, a)
		}
	})
	t.Run("Arrays", func(t *testing.T) {
		var got []uuid.UUID
		if err := pool.QueryRow(ctx, "SELECT array_reverse($1::uuid[])", []uuid.UUID{a, b}).Scan(&got); err != nil {
			if !strings.Contains(err.Error(), "array_reverse") {
				t.Fatal(err)
			}
			// PostgreSQL before 18 has no array_reverse.
			err = pool.QueryRow(ctx, "SELECT ARRAY[($1::uuid[])[2], ($1::uuid[])[1]]", []uuid.UUID{a, b}).Scan(&got)
			if err != nil {
				t.Fatal(err)
			}
		}
		if len(got) != 2 || got[0] != b || got[1] != a {
			t.Errorf("got %v, want [%v %v]", got, b, a)
		}
	})
}
