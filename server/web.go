package server

import (
	"context"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/bodygate"
	"github.com/workgraph-dev/workgraph/demo"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/session"
	"github.com/workgraph-dev/workgraph/web"
	"github.com/workgraph-dev/workgraph/webhook"
)

// mountWeb mounts the web UI at "/" and, with Config.Demo, loads the demo
// project (once: only when it does not exist yet).
func (s *Server) mountWeb(ctx context.Context, authSvc *auth.Service, throttle *auth.Throttle, bodies *bodygate.Gate, graphSvc *graph.Service, leaseSvc *lease.Service, attSvc *attention.Service, hooks *webhook.Service, links *webhook.AnswerLinks, eventsReader *events.Reader) error {
	web.Mount(s.echo, web.Deps{
		Sessions:        session.NewStore(s.pool, s.cfg.Clock),
		Auth:            authSvc,
		Throttle:        throttle,
		Bodies:          bodies,
		Graph:           graphSvc,
		Leases:          leaseSvc,
		Attention:       attSvc,
		Webhooks:        hooks,
		Links:           links,
		Events:          eventsReader,
		EventsHeartbeat: s.cfg.EventsHeartbeat,
		EventsStall:     s.cfg.EventsStall,
		Metrics:         s.metrics,
		LiveRefresh:     s.cfg.LiveRefresh,
		Clock:           s.cfg.Clock,
		Logger:          s.log,
	})
	if !s.cfg.Demo {
		return nil
	}
	res, err := demo.Load(ctx, s.pool, authSvc)
	if err != nil {
		return err
	}
	if res.Loaded {
		// Shown once the listener is bound, with the real address, as the
		// first-start token is (announceDemoToken).
		s.demoToken = res.Token
	}
	return nil
}
