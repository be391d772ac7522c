package fence

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// MaxOperationLen bounds an operation id (bytes).
const MaxOperationLen = 200

// Gate admits or refuses attempts against the tables in one schema. It is
// safe for concurrent use; each call runs on the caller's transaction.
type Gate struct {
	marks    string // quoted schema.fence_marks
	receipts string // quoted schema.fence_receipts
}

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// NewGate returns the gate whose tables live in schema (a plain lower-case
// SQL identifier, e.g. "fence"; Migrate creates them).
func NewGate(schema string) (*Gate, error) {
	if !schemaName.MatchString(schema) {
		return nil, fmt.Errorf("fence: schema %q must be a lower-case SQL identifier ([a-z_][a-z0-9_]*, at most 63 bytes)", schema)
	}
	q := pgx.Identifier{schema}.Sanitize()
	return &Gate{marks: q + ".fence_marks", receipts: q + ".fence_receipts"}, nil
}

// Migrate creates the schema and the gate's two tables in it unless they
// exist. It is the destination's to call (once at start, or from its own
// migrations); it is idempotent.
func Migrate(ctx context.Context, conn interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}, schema string) error {
	g, err := NewGate(schema)
	if err != nil {
		return err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	q := pgx.Identifier{schema}.Sanitize()
	// Two replicas of a destination may start at once.
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('workgraph-fence-migrate:' || $1))", schema); err != nil {
		return err
	}
	for _, stmt := range []string{
		"CREATE SCHEMA IF NOT EXISTS " + q,
		`CREATE TABLE IF NOT EXISTS ` + g.marks + ` (
			resource    text PRIMARY KEY,
			high_water  bigint NOT NULL CHECK (high_water >= 0),
			admitted_at timestamptz NOT NULL DEFAULT now()
		)`,
		`CREATE TABLE IF NOT EXISTS ` + g.receipts + ` (
			resource     text NOT NULL,
			operation    text NOT NULL,
			payload_hash bytea NOT NULL,
			token        bigint NOT NULL,
			result       bytea NOT NULL,
			applied_at   timestamptz NOT NULL DEFAULT now(),
			PRIMARY KEY (resource, operation)
		)`,
	} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("fence: migrate %s: %w", schema, err)
		}
	}
	return tx.Commit(ctx)
}

// Attempt is one request to apply an effect to a resource.
type Attempt struct {
	// Resource names what the token fences, e.g. "<project>/<item>".
	Resource string
	// Token is the fencing value (a workgraph lease's epoch): at least the
	// committed high-water mark to be admitted.
	Token int64
	// Operation is the stable id of the business operation ("" : no
	// receipt; fencing only, and a repeat applies again).
	Operation string
	// Payload is what the operation applies; its SHA-256 is kept in the
	// receipt, so a replay must carry the same bytes.
	Payload []byte
}

// Admission is Admit's answer.
type Admission struct {
	// Replayed: the operation was already applied with this payload; the
	// caller must not apply it again and answers Result.
	Replayed bool
	// Result is the stored result of a replayed operation.
	Result []byte
}

func (a Attempt) check() error {
	switch {
	case a.Resource == "":
		return fmt.Errorf("%w: no resource", ErrInvalidAttempt)
	case a.Token < 0:
		return fmt.Errorf("%w: token %d is negative", ErrInvalidAttempt, a.Token)
	case len(a.Operation) > MaxOperationLen:
		return fmt.Errorf("%w: operation id is longer than %d bytes", ErrInvalidAttempt, MaxOperationLen)
	case !storable(a.Resource):
		return fmt.Errorf("%w: the resource is not UTF-8 text without NUL", ErrInvalidAttempt)
	case !storable(a.Operation):
		return fmt.Errorf("%w: the operation id is not UTF-8 text without NUL", ErrInvalidAttempt)
	}
	return nil
}

// storable reports whether s is text PostgreSQL's text type takes: valid
// UTF-8 without NUL.
func storable(s string) bool {
	return utf8.ValidString(s) && !strings.Contains(s, "\x00")
}

// Admit decides an attempt inside the destination's transaction tx, before
// the effect is applied:
//
//   - a token below the resource's committed high-water mark is refused
//     (*StaleTokenError, ErrStaleToken); otherwise the mark is raised to
//     the token (equal tokens are admitted), by the same statement that
//     compares, which also locks the resource's row until tx ends;
//   - with an operation id, a receipt of the same operation and payload
//     is a replay (Admission.Replayed, its stored Result: do not apply
//     again); one with another payload is refused
//     (*OperationConflictError, ErrOperationConflict).
//
// After a fresh admission the caller applies its effect and calls Record
// on the same transaction. Everything Admit wrote commits or rolls back
// with tx: a refused attempt's caller rolls tx back.
//
// An attempt whose resource or operation id is not storable text (not
// UTF-8, or with NUL), too long, or with a negative token is
// ErrInvalidAttempt, decided before tx is used.
//
// tx is expected at PostgreSQL's default isolation, READ COMMITTED:
// attempts at one resource then wait for each other on its row and see
// each other's committed receipts. Under REPEATABLE READ or SERIALIZABLE
// a racing attempt fails with a serialization error instead, and the
// caller retries its transaction.
func (g *Gate) Admit(ctx context.Context, tx pgx.Tx, a Attempt) (Admission, error) {
	if err := a.check(); err != nil {
		return Admission{}, err
	}
	// The fence is the predicate of the upsert: no row back means a larger
	// token is committed.
	var hw int64
	err := tx.QueryRow(ctx, `INSERT INTO `+g.marks+` AS m (resource, high_water) VALUES ($1, $2)
		ON CONFLICT (resource) DO UPDATE SET high_water = EXCLUDED.high_water, admitted_at = now()
		WHERE m.high_water <= EXCLUDED.high_water
		RETURNING m.high_water`, a.Resource, a.Token).Scan(&hw)
	if errors.Is(err, pgx.ErrNoRows) {
		// Only for the message: the refusal was decided above, and the
		// row cannot fall below a committed mark.
		var cur int64
		if err := tx.QueryRow(ctx, `SELECT high_water FROM `+g.marks+` WHERE resource = $1`, a.Resource).Scan(&cur); err != nil {
			return Admission{}, err
		}
		return Admission{}, &StaleTokenError{Resource: a.Resource, Token: a.Token, HighWater: cur}
	}
	if err != nil {
		return Admission{}, err
	}
	if a.Operation == "" {
		return Admission{}, nil
	}
	// The resource's row is locked by the upsert, so no other transaction
	// records this operation between this read and our Record.
	var hash, result []byte
	err = tx.QueryRow(ctx, `SELECT payload_hash, result FROM `+g.receipts+` WHERE resource = $1 AND operation = $2`,
		a.Resource, a.Operation).Scan(&hash, &result)
	if errors.Is(err, pgx.ErrNoRows) {
		return Admission{}, nil
	}
	if err != nil {
		return Admission{}, err
	}
	if sum := sha256.Sum256(a.Payload); string(sum[:]) != string(hash) {
		return Admission{}, &OperationConflictError{Resource: a.Resource, Operation: a.Operation}
	}
	return Admission{Replayed: true, Result: result}, nil
}

// Record keeps the receipt of an admitted, applied operation (its payload
// hash and result) in tx, so that a replay after commit is answered with
// result. An attempt without an operation id records nothing.
func (g *Gate) Record(ctx context.Context, tx pgx.Tx, a Attempt, result []byte) error {
	if err := a.check(); err != nil {
		return err
	}
	if a.Operation == "" {
		return nil
	}
	if result == nil {
		result = []byte{}
	}
	sum := sha256.Sum256(a.Payload)
	_, err := tx.Exec(ctx, `INSERT INTO `+g.receipts+` (resource, operation, payload_hash, token, result)
		VALUES ($1, $2, $3, $4, $5)`, a.Resource, a.Operation, sum[:], a.Token, result)
	return err
}

// Mark is a resource's committed state as seen by one statement.
type Mark struct {
	HighWater int64
	Receipts  int
}

// Marks reads a resource's high-water mark (0 when none was admitted) and
// its number of receipts, for diagnostics and tests.
func (g *Gate) Marks(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, resource string) (Mark, error) {
	var m Mark
	err := q.QueryRow(ctx, `SELECT coalesce((SELECT high_water FROM `+g.marks+` WHERE resource = $1), 0),
		(SELECT count(*) FROM `+g.receipts+` WHERE resource = $1)`, resource).Scan(&m.HighWater, &m.Receipts)
	return m, err
}
