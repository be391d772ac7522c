package fence_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/fence"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	otherPub, other, _ := ed25519.GenerateKey(rand.Reader)
	claims := fence.Claims{Lease: "l-1", Item: "i-1", Project: "p-1", Epoch: 2,
		Expires: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)} // long past: a diagnostic only
	tok, err := fence.Sign(key, claims)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("OK", func(t *testing.T) {
		c, err := fence.Verify([]ed25519.PublicKey{otherPub, pub}, tok)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if c.Resource() != "p-1/i-1" || c.Epoch != 2 || c.KeyID != fence.KeyID(pub) || !c.Expires.Equal(claims.Expires) {
			t.Fatalf("claims %+v", c)
		}
		if a := c.Attempt("op", nil); a.Resource != "p-1/i-1" || a.Token != 2 {
			t.Fatalf("attempt %+v: want resource p-1/i-1, token 2 (the epoch)", a)
		}
	})
	forged, _ := fence.Sign(other, claims)
	for name, bad := range map[string]string{
		"ErrForged":     forged,
		"ErrUntrusted":  tok[:len(tok)-4] + "AAAA",
		"ErrNoPrefix":   strings.TrimPrefix(tok, fence.TokenPrefix),
		"ErrNoSig":      tok[:strings.LastIndexByte(tok, '.')],
		"ErrGarbage":    fence.TokenPrefix + "!!.!!",
		"ErrEmpty":      "",
		"ErrTooLong":    tok + strings.Repeat("A", fence.MaxTokenLen),
		"ErrZeroEpoch":  mustSign(t, key, fence.Claims{Lease: "l", Item: "i", Project: "p"}),
		"ErrNoLeaseIDs": mustSign(t, key, fence.Claims{Epoch: 1}),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := fence.Verify([]ed25519.PublicKey{pub}, bad); !errors.Is(err, fence.ErrInvalidToken) {
				t.Fatalf("Verify(%q) = %v, want ErrInvalidToken", bad, err)
			}
		})
	}
	t.Run("Keys", func(t *testing.T) {
		doc, _ := json.Marshal(fence.Keys{Keys: []fence.PublicKey{fence.PublicKeyEntry(pub)}})
		keys, err := fence.ParseKeys(doc)
		if err != nil || len(keys) != 1 || !keys[0].Equal(pub) {
			t.Fatalf("ParseKeys: %v, %v", keys, err)
		}
		if _, err := fence.ParseKeys([]byte(`{"keys":[]}`)); err == nil {
			t.Fatal("a document without keys was accepted")
		}
		one, err := fence.ParsePublicKey(fence.PublicKeyEntry(pub).Key + "\n")
		if err != nil || !one.Equal(pub) {
			t.Fatalf("ParsePublicKey: %v", err)
		}
	})
}

func mustSign(t *testing.T, key ed25519.PrivateKey, c fence.Claims) string {
	t.Helper()
	tok, err := fence.Sign(key, c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestTokenFormatAsDocumented checks a token the way docs/agents.md
// ("Checking a token outside Go") tells a destination without this
// package to: split at the dots, decode the claims, verify the signature
// of everything before the last dot with the key the kid names.
func TestTokenFormatAsDocumented(t *testing.T) {
	t.Parallel()
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	tok, err := fence.Sign(key, fence.Claims{Lease: "l-1", Item: "i-1", Project: "p-1", Epoch: 4, Scopes: []string{"repo:web/**"}})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0] != "wgf1" {
		t.Fatalf("token %q is not wgf1.<claims>.<signature>", tok)
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("claims are not unpadded base64url: %v", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(body, &claims); err != nil {
		t.Fatal(err)
	}
	for member := range claims {
		switch member {
		case "lease", "item", "project", "epoch", "exp", "kid", "scopes":
		default:
			t.Errorf("claims member %q is not documented", member)
		}
	}
	if claims["kid"] != fence.PublicKeyEntry(pub).KeyID || claims["epoch"] != 4.0 {
		t.Errorf("claims %v: want the key's kid and epoch 4", claims)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatalf("signature is not unpadded base64url: %v", err)
	}
	if !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig) {
		t.Fatal("the signature is not of the bytes before the last dot")
	}
}
