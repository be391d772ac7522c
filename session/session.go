package session

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
)

// TTL is how long a session lasts after sign-in: a working day.
const TTL = 12 * time.Hour

// maxIDBytes bounds the ids Lookup accepts (a real one has 43).
const maxIDBytes = 100

// Session is a signed-in person: the principal of the token they signed
// in with and when the session ends.
type Session struct {
	Principal auth.Principal
	Expires   time.Time
}

// Store keeps sessions.
type Store struct {
	pool  *pgxpool.Pool
	clock clock.Clock
	q     *dbq.Queries
}

// NewStore returns a store on pool; a nil clock is the database's.
func NewStore(pool *pgxpool.Pool, clk clock.Clock) *Store {
	if clk == nil {
		clk = clock.Database{}
	}
	return &Store{pool: pool, clock: clk, q: dbq.New()}
}

// Create starts a session for p and returns its raw id (for the cookie,
// and nowhere else) and its end. It also deletes the sessions that have
// ended: sign-ins are rare, so they do the housekeeping.
func (s *Store) Create(ctx context.Context, p auth.Principal) (id string, expires time.Time, err error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", time.Time{}, err
	}
	id = base64.RawURLEncoding.EncodeToString(raw)
	now := s.clock.Now()
	if _, err := s.q.DeleteExpiredWebSessions(ctx, s.pool, now); err != nil {
		return "", time.Time{}, db.Translate(err)
	}
	expires, err = s.q.CreateWebSession(ctx, s.pool, dbq.CreateWebSessionParams{
		IDHash: hashID(id), TokenID: p.TokenID, Now: now, TtlSeconds: TTL.Seconds(),
	})
	if err != nil {
		return "", time.Time{}, db.Translate(err)
	}
	return id, expires, nil
}

// Lookup returns the live session with this raw id; ok is false when there
// is none (unknown, expired, or its token was revoked).
func (s *Store) Lookup(ctx context.Context, id string) (sess Session, ok bool, err error) {
	if id == "" || len(id) > maxIDBytes {
		return Session{}, false, nil
	}
	row, err := s.q.GetWebSession(ctx, s.pool, dbq.GetWebSessionParams{IDHash: hashID(id), Now: s.clock.Now()})
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, false, nil
	}
	if err != nil {
		return Session{}, false, db.Translate(err)
	}
	return Session{
		Principal: auth.Principal{TokenID: row.TokenID, Name: row.TokenName, Role: auth.Role(row.Role), ProjectID: row.ProjectID},
		Expires:   row.ExpiresAt,
	}, true, nil
}

// End deletes the session (sign-out); an unknown id is no error.
func (s *Store) End(ctx context.Context, id string) error {
	return db.Translate(s.q.DeleteWebSession(ctx, s.pool, hashID(id)))
}

func hashID(id string) []byte {
	h := sha256.Sum256([]byte(id))
	return h[:]
}

// FlashTTL is how long a one-time message waits for the page that shows
// it: the redirect after a form post follows at once.
const FlashTTL = 5 * time.Minute

// PutFlash keeps value for the session with raw id sessionID, in project,
// under key, until TakeFlash reads it or FlashTTL passes (a later one of
// the same key replaces it). It is for what must not travel in a URL or a
// cookie (a webhook's signing secret shown once after the post that made
// it).
func (s *Store) PutFlash(ctx context.Context, sessionID string, project uuid.UUID, key, value string) error {
	return db.Translate(s.q.PutWebFlash(ctx, s.pool, dbq.PutWebFlashParams{
		ProjectID: project, SessionHash: hashID(sessionID), Key: key, Value: value,
		Now: s.clock.Now(), TtlSeconds: FlashTTL.Seconds(),
	}))
}

// TakeFlash returns and deletes the session's message under key in
// project, in one statement: a second call (a reload) finds nothing. ok is
// false when there is none, or it expired.
func (s *Store) TakeFlash(ctx context.Context, sessionID string, project uuid.UUID, key string) (value string, ok bool, err error) {
	row, err := s.q.TakeWebFlash(ctx, s.pool, dbq.TakeWebFlashParams{
		ProjectID: project, SessionHash: hashID(sessionID), Key: key, Now: s.clock.Now(),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, db.Translate(err)
	}
	if !row.Live {
		return "", false, nil
	}
	return row.Value, true, nil
}
