package api

import (
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/graph"
)

// immutable is a bounded in-process cache of facts that never change once
// written: a project's id and name (projects are never renamed or
// deleted), a lease's project and the token it was granted to (fixed by the
// leases table's triggers). Caching them is therefore right with any number
// of replicas; it saves the lookups every request would otherwise repeat.
// When full it starts over.
type immutable[K comparable, V any] struct {
	mu  sync.Mutex
	max int
	m   map[K]V
}

func newImmutable[K comparable, V any](max int) *immutable[K, V] {
	return &immutable[K, V]{max: max, m: make(map[K]V)}
}

func (c *immutable[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *immutable[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[k] = v
}

// holder is what a lease route needs to know of the lease before the
// fenced statement runs.
type holder struct {
	project uuid.UUID
	token   *uuid.UUID
}

// cachedProject is graph.Service.Project through the cache (by name and by
// id).
func (a *API) cachedProject(ctx context.Context, ref string) (graph.Project, error) {
	if p, ok := a.projects.get(ref); ok {
		return p, nil
	}
	p, err := a.svc.Graph.Project(ctx, ref)
	if err != nil {
		return graph.Project{}, err
	}
	a.projects.put(p.ID.String(), p)
	a.projects.put(p.Name, p)
	return p, nil
}

// leaseHolder is lease.Service.Holder through the cache.
func (a *API) leaseHolder(ctx context.Context, id uuid.UUID) (holder, error) {
	if h, ok := a.holders.get(id); ok {
		return h, nil
	}
	project, token, err := a.svc.Leases.Holder(ctx, id)
	if err != nil {
		return holder{}, err
	}
	h := holder{project: project, token: token}
	a.holders.put(id, h)
	return h, nil
}
