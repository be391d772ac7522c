package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
)

// sessionCookie is the name of the cookie that carries the session id.
const sessionCookie = "wg_session"

// sessionTTL is how long a session lasts after sign-in (absolute, not
// sliding): a working day.
const sessionTTL = 12 * time.Hour

// session is a signed-in person: the principal of the token they signed in
// with, and the CSRF token every form of theirs must carry.
type session struct {
	Principal auth.Principal
	CSRF      string
	Expires   time.Time
}

// sessions stores browser sessions in web_sessions. The random session id
// exists only in the cookie; the table keeps its SHA-256 hash, so a leaked
// table cannot be replayed as cookies.
type sessions struct {
	pool  *pgxpool.Pool
	clock clock.Clock
	q     *dbq.Queries
}

// create starts a session for the principal and returns the raw id to put
// in the cookie.
func (s *sessions) create(ctx context.Context, p auth.Principal) (id string, expires time.Time, err error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", time.Time{}, err
	}
	id = base64.RawURLEncoding.EncodeToString(raw)
	now := s.clock.Now()
	// Housekeeping: sign-ins are rare, so they sweep ended sessions.
	if _, err := s.q.DeleteExpiredWebSessions(ctx, s.pool, now); err != nil {
		return "", time.Time{}, db.Translate(err)
	}
	expires, err = s.q.CreateWebSession(ctx, s.pool, dbq.CreateWebSessionParams{
		IDHash: hashID(id), TokenID: p.TokenID, Now: now, TtlSeconds: sessionTTL.Seconds(),
	})
	if err != nil {
		return "", time.Time{}, db.Translate(err)
	}
	return id, expires, nil
}

// lookup returns the live session with this raw id; ok is false when there
// is none (unknown, expired, or its token was revoked).
func (s *sessions) lookup(ctx context.Context, id string) (session, bool, error) {
	if id == "" || len(id) > 100 {
		return session{}, false, nil
	}
	row, err := s.q.GetWebSession(ctx, s.pool, dbq.GetWebSessionParams{IDHash: hashID(id), Now: s.clock.Now()})
	if errors.Is(err, pgx.ErrNoRows) {
		return session{}, false, nil
	}
	if err != nil {
		return session{}, false, db.Translate(err)
	}
	return session{
		Principal: auth.Principal{TokenID: row.TokenID, Name: row.TokenName, Role: auth.Role(row.Role), ProjectID: row.ProjectID},
		CSRF:      csrfToken(id),
		Expires:   row.ExpiresAt,
	}, true, nil
}

// end deletes the session (sign-out).
func (s *sessions) end(ctx context.Context, id string) error {
	return db.Translate(s.q.DeleteWebSession(ctx, s.pool, hashID(id)))
}

func hashID(id string) []byte {
	h := sha256.Sum256([]byte(id))
	return h[:]
}

// csrfToken derives the session's CSRF token from its secret id. It is
// stable for the session's life, differs between sessions, and cannot be
// turned back into the id.
func csrfToken(id string) string {
	m := hmac.New(sha256.New, []byte(id))
	m.Write([]byte("workgraph csrf v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// secureRequest reports whether the browser reached us over TLS, directly
// or through a proxy that says so. The session cookie is Secure exactly
// then: a Secure cookie would never come back over plain http, which is how
// the server is reached on loopback (http://127.0.0.1:8080) by default.
func secureRequest(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

// setSessionCookie sets (or, with an empty id, clears) the session cookie.
func setSessionCookie(w http.ResponseWriter, r *http.Request, id string, expires time.Time) {
	c := &http.Cookie{
		Name:     sessionCookie,
		Value:    id,
		Path:     "/",
		HttpOnly: true,
		Secure:   secureRequest(r),
		SameSite: http.SameSiteLaxMode,
	}
	if id == "" {
		c.MaxAge = -1
	} else {
		c.Expires = expires
	}
	http.SetCookie(w, c)
}
