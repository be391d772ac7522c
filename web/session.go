package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"time"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/session"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// sessionCookie is the name of the cookie that carries the session id.
const sessionCookie = "wg_session"

// sessionCookieOf is the session id the request's cookie carries, if any;
// invalid_argument when the request carries more than one session cookie
// (which one is the person's would be a guess).
func sessionCookieOf(r *http.Request) (string, bool, error) {
	var id string
	n := 0
	for _, c := range r.Cookies() {
		if c.Name == sessionCookie {
			id, n = c.Value, n+1
		}
	}
	switch {
	case n > 1:
		return "", false, wgerr.New(wgerr.CodeInvalid,
			"Your browser sent %d session cookies (%s) for this site, so which session is yours is unclear. Clear this site's cookies and sign in again.", n, sessionCookie)
	case n == 0:
		return "", false, nil
	}
	return id, true, nil
}

// signedIn is a signed-in person: the stored session (package session) and
// the CSRF token every form of theirs must carry.
type signedIn struct {
	session.Session
	CSRF string
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
// or through a trusted proxy that says so (auth.Secure: X-Forwarded-Proto
// is believed only from a peer in --trusted-proxies). The session cookie is
// Secure exactly then: a Secure cookie would never come back over plain
// http, which is how the server is reached on loopback
// (http://127.0.0.1:8080) by default.
func secureRequest(r *http.Request) bool {
	return auth.Secure(r)
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
