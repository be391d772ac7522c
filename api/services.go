package api

import (
	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/fencekey"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/webhook"
)

// Services are the domain services the API fronts.
type Services struct {
	Graph     *graph.Service
	Leases    *lease.Service
	Attention *attention.Service
	// Notifier wakes long-polling claims; nil makes them recheck on a
	// timer only.
	Notifier *lease.Notifier
	// Events reads the event log (long polls and streams wait on its
	// follower).
	Events *events.Reader
	// Fence signs the fence token of every granted or renewed lease;
	// nil answers an empty fence_token and serves no keys.
	Fence *fencekey.Signer
	// Webhooks manages the projects' webhooks and AnswerLinks their
	// notification settings; nil answers their routes 503.
	Webhooks    *webhook.Service
	AnswerLinks *webhook.AnswerLinks
}
