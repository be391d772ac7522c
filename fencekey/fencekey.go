// Package fencekey owns the deployment's fence signing key: the Ed25519
// key pair, stored in the database (table fence_keys) so that every
// replica signs with the same key, with which the server signs the fence
// token of each lease it grants or renews. Destinations verify those
// tokens offline with package fence and the public key (Keys).
package fencekey

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/fence"
	"github.com/workgraph-dev/workgraph/lease"
)

// Signer signs fence tokens with the deployment's key.
type Signer struct {
	key ed25519.PrivateKey
	pub ed25519.PublicKey
}

// Load returns the signer of the deployment's key, creating the key on
// the first start (concurrent first starts of several replicas agree on
// one: the first insert wins, every replica reads it back).
func Load(ctx context.Context, q dbq.DBTX) (*Signer, error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return nil, fmt.Errorf("fencekey: %w", err)
	}
	queries := dbq.New()
	if err := queries.InsertFenceKey(ctx, q, seed); err != nil {
		return nil, db.Translate(err)
	}
	stored, err := queries.GetFenceKey(ctx, q)
	if err != nil {
		return nil, db.Translate(err)
	}
	if len(stored) != ed25519.SeedSize {
		return nil, fmt.Errorf("fencekey: the stored key seed has %d bytes, want %d", len(stored), ed25519.SeedSize)
	}
	key := ed25519.NewKeyFromSeed(stored)
	return &Signer{key: key, pub: key.Public().(ed25519.PublicKey)}, nil
}

// Sign returns the fence token of l: its lease id, item, project, epoch
// and write scopes (and its expiry, a diagnostic), signed.
func (s *Signer) Sign(l lease.Lease) (string, error) {
	return fence.Sign(s.key, fence.Claims{
		Lease: l.ID.String(), Item: l.ItemID.String(), Project: l.ProjectID.String(), Epoch: l.Epoch, Expires: l.ExpiresAt,
		Scopes: l.Scopes,
	})
}

// PublicKey is the key destinations verify tokens with.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.pub }

// Keys is the keys document served at fence.KeysPath.
func (s *Signer) Keys() fence.Keys {
	return fence.Keys{Keys: []fence.PublicKey{fence.PublicKeyEntry(s.pub)}}
}
