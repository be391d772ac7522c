package web

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
)

// csrfField is the name of the hidden form field that carries the CSRF
// token.
const csrfField = "csrf"

// Cross-site request forgery is refused twice over:
//
//  1. sameOrigin refuses any unsafe request that the browser marks as coming
//     from another site (Sec-Fetch-Site) or another origin (Origin), before
//     the session is even looked at;
//  2. every form carries the session's CSRF token (csrfToken), compared in
//     constant time on every POST (validCSRF). The sign-in form, which has
//     no session yet, uses a double-submit cookie instead (signinCookie).
//
// Requests without either header (old browsers, curl) rely on the token.

// sameOrigin reports whether an unsafe request may proceed: Sec-Fetch-Site
// must be same-origin (or none: typed by the user), and an Origin header,
// when present, must name this host.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default: // same-site, cross-site
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false // includes "null" (sandboxed frames, data: URLs)
	}
	return strings.EqualFold(u.Host, r.Host)
}

// validCSRF compares a submitted token with the expected one in constant
// time.
func validCSRF(want, got string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(want), []byte(got)) == 1
}
