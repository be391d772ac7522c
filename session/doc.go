// Package session owns the web UI's sign-in sessions (table web_sessions).
//
// A session is created for a person's token at sign-in and lasts TTL by
// the database's clock (absolute, not sliding). Its random id exists only
// in the browser's cookie; the table keeps its SHA-256 hash, so a leaked
// table cannot be replayed as cookies. A lookup joins the token, so a
// session ends at once when its token is revoked, on every replica.
package session
