// Package auth owns API tokens and the principals they stand for: minting
// (a random secret shown once, stored only as a SHA-256 hash), verifying a
// bearer string in constant time, listing and revoking, the operator's
// bootstrap token and the admin token created on a first start.
//
// A token is the bearer string "wg_<id>_<secret>" where id is the token's
// UUID in 32 hex digits, so verification looks the row up by id and compares
// hashes with subtle.ConstantTimeCompare. An operator-chosen bootstrap token
// (WORKGRAPH_BOOTSTRAP_TOKEN) may have any form; it is looked up by the hash
// of the whole string. Revocation takes effect at once: nothing is cached.
//
// It also limits requests without valid credentials per client address
// (Throttle), and says what that address is (Proxies): the connection's
// peer, or, when the peer is a trusted reverse proxy, the client it names
// in X-Forwarded-For.
package auth
