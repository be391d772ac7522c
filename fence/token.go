package fence

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// TokenPrefix starts every encoded fence token (version 1).
const TokenPrefix = "wgf1."

// MaxTokenLen bounds an encoded token (bytes); a longer one is invalid
// without being decoded.
const MaxTokenLen = 2048

// Claims are what a fence token says: which lease of which item of which
// project, at which epoch, holding which write scopes. Expires is the lease's expiry when the token was
// signed, a diagnostic only: safety never depends on a clock (a renewed
// lease gets a new token; a reclaimed one a larger epoch).
type Claims struct {
	Lease   string    `json:"lease"`
	Item    string    `json:"item"`
	Project string    `json:"project"`
	Epoch   int64     `json:"epoch"`
	Expires time.Time `json:"exp"`
	// KeyID names the key that signed the token (KeyID of its public key).
	KeyID string `json:"kid"`
	// Scopes are the write scopes the lease was granted (see Covers);
	// absent for a lease that holds none. A verifier older than this
	// member refuses the tokens that carry it (unknown members are
	// invalid): update the fence package of such a destination.
	Scopes []string `json:"scopes,omitempty"`
}

// Resource is what the token fences at a destination: "<project>/<item>".
func (c Claims) Resource() string { return c.Project + "/" + c.Item }

// Attempt is the gate attempt of this token for an operation and payload:
// resource project/item, token the epoch.
func (c Claims) Attempt(operation string, payload []byte) Attempt {
	return Attempt{Resource: c.Resource(), Token: c.Epoch, Operation: operation, Payload: payload}
}

// KeyID is the short stable id of a public key (hex of the first 8 bytes
// of its SHA-256).
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// Sign encodes c as a token signed with key (c.KeyID is set from it):
// "wgf1." + base64url(JSON claims) + "." + base64url(signature of the
// bytes before the last dot).
func Sign(key ed25519.PrivateKey, c Claims) (string, error) {
	c.KeyID = KeyID(key.Public().(ed25519.PublicKey))
	c.Expires = c.Expires.UTC()
	body, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	signed := TokenPrefix + base64.RawURLEncoding.EncodeToString(body)
	sig := ed25519.Sign(key, []byte(signed))
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// Verify checks token offline against the trusted keys and returns its
// claims. A malformed token, or one no trusted key signed, is
// ErrInvalidToken. It does not look at Expires: whether the lease is
// still current is decided by the gate (a newer epoch fences it off), not
// by the destination's clock.
func Verify(keys []ed25519.PublicKey, token string) (Claims, error) {
	invalid := func(why string) (Claims, error) {
		return Claims{}, fmt.Errorf("%w: %s", ErrInvalidToken, why)
	}
	if len(token) > MaxTokenLen {
		return invalid("longer than the bound")
	}
	rest, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok {
		return invalid("not a workgraph fence token (it starts with " + TokenPrefix + ")")
	}
	body64, sig64, ok := strings.Cut(rest, ".")
	if !ok {
		return invalid("no signature")
	}
	body, err := base64.RawURLEncoding.DecodeString(body64)
	if err != nil {
		return invalid("claims are not base64url")
	}
	sig, err := base64.RawURLEncoding.DecodeString(sig64)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return invalid("signature is not an Ed25519 signature in base64url")
	}
	var c Claims
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return invalid("claims are not JSON")
	}
	signed := []byte(token[:len(TokenPrefix)+len(body64)])
	for _, k := range keys {
		if len(k) == ed25519.PublicKeySize && KeyID(k) == c.KeyID && ed25519.Verify(k, signed, sig) {
			if c.Lease == "" || c.Item == "" || c.Project == "" || c.Epoch < 1 {
				return invalid("claims lack lease, item, project or a positive epoch")
			}
			return c, nil
		}
	}
	return invalid("not signed by a trusted key (key " + c.KeyID + ")")
}

// PublicKey is one entry of the keys document a workgraph server serves at
// KeysPath.
type PublicKey struct {
	KeyID     string `json:"kid"`
	Algorithm string `json:"alg"`
	// Key is the raw 32-byte Ed25519 public key in base64url.
	Key string `json:"public_key"`
}

// Keys is the document served at KeysPath.
type Keys struct {
	Keys []PublicKey `json:"keys"`
}

// KeysPath is where a workgraph server publishes its fence keys.
const KeysPath = "/.well-known/workgraph-fence-keys"

// PublicKeyEntry describes pub for the keys document.
func PublicKeyEntry(pub ed25519.PublicKey) PublicKey {
	return PublicKey{KeyID: KeyID(pub), Algorithm: "Ed25519", Key: base64.RawURLEncoding.EncodeToString(pub)}
}

// ParseKeys reads a keys document (as served at KeysPath) into the keys
// Verify trusts.
func ParseKeys(doc []byte) ([]ed25519.PublicKey, error) {
	var ks Keys
	if err := json.Unmarshal(doc, &ks); err != nil {
		return nil, fmt.Errorf("fence: keys document: %w", err)
	}
	var out []ed25519.PublicKey
	for _, k := range ks.Keys {
		if k.Algorithm != "Ed25519" {
			continue
		}
		pub, err := ParsePublicKey(k.Key)
		if err != nil {
			return nil, err
		}
		out = append(out, pub)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("fence: keys document holds no Ed25519 key")
	}
	return out, nil
}

// ParsePublicKey reads one base64url (or standard base64) Ed25519 public
// key, as `workgraph fence key` prints it.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		b, err = base64.StdEncoding.DecodeString(s)
	}
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("fence: %q is not a base64 Ed25519 public key", s)
	}
	return ed25519.PublicKey(b), nil
}
