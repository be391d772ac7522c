// Package fencekey owns the deployment's fence signing keys: Ed25519 key
// pairs stored in the database (table fence_keys) so that every replica
// signs with the same key, with which the server signs the fence token of
// each lease it grants or renews. Destinations verify those tokens offline
// with package fence and the published public keys (Keys).
//
// The key can be rotated (Rotate): the new key signs from then on, and
// the keys it replaces stay published for a grace period, so the tokens
// they signed for live leases still verify. Each replica reads the keys
// again every RefreshInterval (Signer.Refresh, run by the server).
package fencekey

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/fence"
	"github.com/workgraph-dev/workgraph/lease"
)

// RefreshInterval is how often a server reads the keys again: after a
// rotation every replica signs with the new key, and publishes it, within
// this time.
const RefreshInterval = 10 * time.Second

// MaxGrace bounds a rotation's grace period.
const MaxGrace = 7 * 24 * time.Hour

// Signer signs fence tokens with the deployment's current key.
type Signer struct {
	ring atomic.Pointer[keyring]
}

// keyring is what one read of fence_keys found.
type keyring struct {
	key       ed25519.PrivateKey
	pub       ed25519.PublicKey
	published []ed25519.PublicKey // newest first, pub among them
}

// Load returns the signer of the deployment's keys, creating the first
// key on the first start (concurrent first starts of several replicas
// agree on one: the first insert wins, every replica reads it back).
func Load(ctx context.Context, q dbq.DBTX) (*Signer, error) {
	seed, err := newSeed()
	if err != nil {
		return nil, err
	}
	if err := dbq.New().InsertFenceKey(ctx, q, seed); err != nil {
		return nil, db.Translate(err)
	}
	s := &Signer{}
	if err := s.Refresh(ctx, q); err != nil {
		return nil, err
	}
	return s, nil
}

// Refresh reads the keys again: the signing key (the newest) and the
// published ones (it, and those a rotation replaced whose grace has not
// passed by the database clock). On an error the signer keeps its keys.
func (s *Signer) Refresh(ctx context.Context, q dbq.DBTX) error {
	queries := dbq.New()
	stored, err := queries.GetFenceKey(ctx, q)
	if err != nil {
		return db.Translate(err)
	}
	seeds, err := queries.ListFenceKeys(ctx, q, nil)
	if err != nil {
		return db.Translate(err)
	}
	r := &keyring{}
	if r.key, err = keyOf(stored); err != nil {
		return err
	}
	r.pub = r.key.Public().(ed25519.PublicKey)
	r.published = []ed25519.PublicKey{r.pub}
	for _, seed := range seeds {
		k, err := keyOf(seed)
		if err != nil {
			return err
		}
		if pub := k.Public().(ed25519.PublicKey); !pub.Equal(r.pub) {
			r.published = append(r.published, pub)
		}
	}
	s.ring.Store(r)
	return nil
}

// Rotate adds a new signing key and retires the keys it replaces after
// grace (0: at once, for a key that leaked; at most MaxGrace): until then
// they stay published, so destinations still accept the tokens they
// signed for leases granted before the rotation. Servers sign with the
// new key within RefreshInterval. It returns the new key's id
// (fence.KeyID).
func Rotate(ctx context.Context, q dbq.DBTX, grace time.Duration) (string, error) {
	if grace < 0 || grace > MaxGrace {
		return "", fmt.Errorf("fencekey: the grace period must be between 0 and %s, got %s", MaxGrace, grace)
	}
	seed, err := newSeed()
	if err != nil {
		return "", err
	}
	if _, err := dbq.New().RotateFenceKey(ctx, q, dbq.RotateFenceKeyParams{Seed: seed, GraceSeconds: grace.Seconds()}); err != nil {
		return "", db.Translate(err)
	}
	return fence.KeyID(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)), nil
}

// Sign returns the fence token of l: its lease id, item, project, epoch
// and write scopes (and its expiry, a diagnostic), signed with the current
// key.
func (s *Signer) Sign(l lease.Lease) (string, error) {
	return fence.Sign(s.ring.Load().key, fence.Claims{
		Lease: l.ID.String(), Item: l.ItemID.String(), Project: l.ProjectID.String(), Epoch: l.Epoch, Expires: l.ExpiresAt,
		Scopes: l.Scopes,
	})
}

// PublicKey is the key of the current signing key.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.ring.Load().pub }

// Keys is the keys document served at fence.KeysPath: the signing key
// first, then the replaced keys still in their grace period.
func (s *Signer) Keys() fence.Keys {
	var ks fence.Keys
	for _, pub := range s.ring.Load().published {
		ks.Keys = append(ks.Keys, fence.PublicKeyEntry(pub))
	}
	return ks
}

func newSeed() ([]byte, error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return nil, fmt.Errorf("fencekey: %w", err)
	}
	return seed, nil
}

func keyOf(seed []byte) (ed25519.PrivateKey, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("fencekey: a stored key seed has %d bytes, want %d", len(seed), ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}
