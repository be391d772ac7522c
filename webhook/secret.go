package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// secretPrefix marks a Standard Webhooks signing secret; what follows is
// the key in standard base64.
const secretPrefix = "whsec_"

// secretBytes is the key's length (the specification asks for 24 to 64).
const secretBytes = 32

// NewSecret returns a new signing secret, whsec_<base64 of 32 random
// bytes>.
func NewSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// secretKey is the key of a whsec_ secret.
func secretKey(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, secretPrefix)
	if !ok {
		return nil, errors.New("webhook: a signing secret starts with " + secretPrefix)
	}
	return base64.StdEncoding.DecodeString(enc)
}

// Sign returns the webhook-signature header of a message as the Standard
// Webhooks specification defines it: "v1," and the base64 HMAC-SHA256,
// keyed by the secret's decoded bytes, of "{id}.{timestamp}.{body}".
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := secretKey(secret)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(timestamp, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}
