package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"

	"github.com/google/uuid"
)

const prefix = "wg_"

// newBearer returns a fresh bearer string for the token id.
func newBearer(id uuid.UUID) string {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		panic("auth: crypto/rand failed: " + err.Error())
	}
	return prefix + hex.EncodeToString(id[:]) + "_" + hex.EncodeToString(secret)
}

// parseBearer extracts the token id from a "wg_<id>_<secret>" bearer; ok is
// false for any other form.
func parseBearer(bearer string) (id uuid.UUID, ok bool) {
	rest, found := strings.CutPrefix(bearer, prefix)
	if !found || len(rest) < 34 || rest[32] != '_' {
		return uuid.Nil, false
	}
	raw, err := hex.DecodeString(rest[:32])
	if err != nil {
		return uuid.Nil, false
	}
	id, err = uuid.FromBytes(raw)
	return id, err == nil
}

// hashBearer is what the database stores for a bearer string.
func hashBearer(bearer string) []byte {
	h := sha256.Sum256([]byte(bearer))
	return h[:]
}

// sameHash compares two hashes in constant time.
func sameHash(a, b []byte) bool {
	return subtle.ConstantTimeCompare(a, b) == 1
}
