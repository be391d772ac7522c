package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/webhook"
)

// verify is a receiver's check, written from the Standard Webhooks
// specification alone: the key is the base64 after "whsec_", the signed
// content "{id}.{timestamp}.{body}", the header a space-separated list of
// "v1,<base64 HMAC-SHA256>".
func verify(t *testing.T, secret, id, timestamp string, body []byte, header string) bool {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatalf("secret %q: %v", secret, err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "." + string(body)))
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(header) {
		if v, ok := strings.CutPrefix(sig, "v1,"); ok && hmac.Equal([]byte(v), []byte(want)) {
			return true
		}
	}
	return false
}

func TestSign(t *testing.T) {
	t.Parallel()
	t.Run("SpecificationExample", func(t *testing.T) {
		t.Parallel()
		// The example of the Standard Webhooks specification.
		secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		id, ts := "msg_p5jXN8AQM9LWM0D4loKWxJek", int64(1614265330)
		body := []byte(`{"test": 2432232314}`)
		got, err := webhook.Sign(secret, id, ts, body)
		if err != nil {
			t.Fatal(err)
		}
		if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
			t.Fatalf("Sign = %s, want the specification's %s", got, want)
		}
	})
	t.Run("IndependentCheckAccepts", func(t *testing.T) {
		t.Parallel()
		secret, err := webhook.NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		body := []byte(`{"type":"item.created"}`)
		sig, err := webhook.Sign(secret, "evt_x_1", 1700000000, body)
		if err != nil {
			t.Fatal(err)
		}
		if !verify(t, secret, "evt_x_1", "1700000000", body, sig) {
			t.Fatalf("the independent check refused %s", sig)
		}
		if verify(t, secret, "evt_x_1", "1700000000", []byte(`{"type":"item.updated"}`), sig) {
			t.Fatal("the independent check accepted another body")
		}
	})
	t.Run("ErrNotASecret", func(t *testing.T) {
		t.Parallel()
		if _, err := webhook.Sign("not-a-secret", "id", 1, nil); err == nil {
			t.Fatal("Sign accepted a secret without whsec_")
		}
	})
}
