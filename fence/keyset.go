package fence

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrKeysUnavailable: the keys document could not be fetched and no key
// is held yet, so no token can be judged (a destination answers 503, not
// "invalid").
var ErrKeysUnavailable = errors.New("fence: the server's keys document could not be fetched")

// Defaults of a KeySet.
const (
	// DefaultMinRefetch is the shortest time between two fetches caused by
	// tokens that name a key the set does not hold.
	DefaultMinRefetch = 10 * time.Second
	// DefaultFetchTimeout bounds one fetch of the keys document.
	DefaultFetchTimeout = 10 * time.Second
	// DefaultMaxAge is how long a fetched document is trusted before the
	// next verification fetches it again (keys the server retired drop
	// out then).
	DefaultMaxAge = time.Hour
)

// maxKeysDocument bounds the keys document read from the server.
const maxKeysDocument = 1 << 20

// KeySet is the trusted keys of a destination that follows the workgraph
// server's keys document (KeysPath) instead of a fixed list, so that a
// rotation of the server's signing key (`workgraph fence rotate`) does not
// break verification: the document is fetched on first use, again when a
// token names a key the set does not hold (the server has started signing
// with a new key; at most once per MinRefetch, so forged key ids cannot
// make it fetch in a loop), and again once it is older than MaxAge (a
// retired key then stops being trusted). While a fetch fails, the keys
// already held stay trusted. Safe for concurrent use.
type KeySet struct {
	// URL is the keys document, e.g. the WORKGRAPH_FENCE_KEYS_URL a worker
	// is given: http://workgraph.example/.well-known/workgraph-fence-keys.
	URL string
	// Client fetches it (nil: http.DefaultClient).
	Client *http.Client
	// MinRefetch (0: DefaultMinRefetch) and MaxAge (0: DefaultMaxAge).
	MinRefetch, MaxAge time.Duration
	// FetchTimeout bounds one fetch (0: DefaultFetchTimeout): verifications
	// wait for a fetch in progress, so a server that does not answer must
	// not hold them longer.
	FetchTimeout time.Duration

	// now is the clock (nil: time.Now); tests stub it.
	now func() time.Time

	mu      sync.Mutex
	keys    []ed25519.PublicKey
	fetched time.Time // when keys were last fetched (zero: never)
	tried   time.Time // when a fetch was last attempted
}

// Verify checks token against the set's keys (Verify), fetching the keys
// document first when the set holds none, when it is older than MaxAge, or
// when the token names a key the set does not hold. A token no trusted key
// signed is ErrInvalidToken; with no key at all because the document could
// not be fetched, ErrKeysUnavailable.
func (s *KeySet) Verify(ctx context.Context, token string) (Claims, error) {
	keys, err := s.current(ctx, tokenKeyID(token))
	if err != nil {
		return Claims{}, err
	}
	return Verify(keys, token)
}

// Keys returns the keys the set trusts now, fetching the document when it
// holds none or it is older than MaxAge.
func (s *KeySet) Keys(ctx context.Context) ([]ed25519.PublicKey, error) {
	return s.current(ctx, "")
}

// current returns the keys to judge a token signed by kid with ("": any).
func (s *KeySet) current(ctx context.Context, kid string) ([]ed25519.PublicKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	stale := s.fetched.IsZero() || now.Sub(s.fetched) >= s.maxAge()
	unknown := kid != "" && !slices.ContainsFunc(s.keys, func(k ed25519.PublicKey) bool { return KeyID(k) == kid })
	if stale || (unknown && now.Sub(s.tried) >= s.minRefetch()) {
		s.tried = now
		keys, err := s.fetch(ctx)
		switch {
		case err == nil:
			s.keys, s.fetched = keys, now
		case len(s.keys) == 0:
			return nil, fmt.Errorf("%w: %v", ErrKeysUnavailable, err)
		}
	}
	return slices.Clone(s.keys), nil
}

func (s *KeySet) fetch(ctx context.Context) ([]ed25519.PublicKey, error) {
	timeout := s.FetchTimeout
	if timeout <= 0 {
		timeout = DefaultFetchTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, err
	}
	c := s.Client
	if c == nil {
		c = http.DefaultClient
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxKeysDocument))
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", s.URL, res.Status)
	}
	return ParseKeys(body)
}

func (s *KeySet) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

func (s *KeySet) minRefetch() time.Duration {
	if s.MinRefetch > 0 {
		return s.MinRefetch
	}
	return DefaultMinRefetch
}

func (s *KeySet) maxAge() time.Duration {
	if s.MaxAge > 0 {
		return s.MaxAge
	}
	return DefaultMaxAge
}

// tokenKeyID is the key id a token's claims name, read without checking
// anything ("" when it cannot be read): it only decides whether to fetch
// the keys again; Verify judges the token.
func tokenKeyID(token string) string {
	if len(token) > MaxTokenLen {
		return ""
	}
	rest, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok {
		return ""
	}
	body64, _, _ := strings.Cut(rest, ".")
	body, err := base64.RawURLEncoding.DecodeString(body64)
	if err != nil {
		return ""
	}
	var c struct {
		KeyID string `json:"kid"`
	}
	if json.NewDecoder(bytes.NewReader(body)).Decode(&c) != nil {
		return ""
	}
	return c.KeyID
}
