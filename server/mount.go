package server

import (
	"context"
	"time"

	"github.com/workgraph-dev/workgraph/api"
	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// DefaultMaxActiveLeasesPerToken bounds the live leases of one API token
// when Config.MaxActiveLeasesPerToken is 0 (negative: unlimited).
const DefaultMaxActiveLeasesPerToken = 1000

// mount builds the domain services, makes sure someone can sign in
// (bootstrap or first-start token), mounts the API and the web UI, and
// starts the background services, registering their Stop in s.stops.
func (s *Server) mount(ctx context.Context) error {
	clk := s.cfg.Clock
	authSvc := auth.NewService(s.pool, clk)
	if err := s.bootstrap(ctx, authSvc); err != nil {
		return err
	}
	// One throttle of failed authentications for the API and the sign-in.
	throttle := auth.NewThrottle(s.cfg.UnauthenticatedRate, s.cfg.UnauthenticatedBurst, s.log)
	graphSvc := graph.NewService(s.pool, clk)
	policy := s.cfg.Lease
	policy.MaxActivePerToken = s.cfg.MaxActiveLeasesPerToken
	if policy.MaxActivePerToken == 0 {
		policy.MaxActivePerToken = DefaultMaxActiveLeasesPerToken
	}
	// One attention policy for the lease service, the API and the UI.
	attentionSvc := attention.NewService(s.pool, clk, policy.Attention)
	leaseSvc := lease.NewService(s.pool, clk, policy)

	// Background services run until Shutdown, whatever ctx Start was given.
	listenPool := s.pool
	if s.pooled {
		// Only its configuration is used: the notifier dials its own
		// connection, which must not go through the pooler.
		p, err := db.Open(ctx, s.directURL, 1)
		if err != nil {
			return err
		}
		s.stops = append(s.stops, p.Close)
		listenPool = p
	}
	notifier := lease.NewNotifier(listenPool, s.log)
	notifier.Start(context.Background())
	s.stops = append(s.stops, notifier.Stop)
	sweeper := lease.NewSweeper(leaseSvc, s.cfg.SweepInterval, s.log)
	sweeper.Start(context.Background())
	s.stops = append(s.stops, sweeper.Stop)

	// Behind a pooler, synchronous_commit cannot be a session setting: the
	// records share the main pool and commit synchronously.
	idemPool := s.pool
	if !s.pooled {
		p, err := db.OpenAsyncCommit(ctx, s.pool, 8)
		if err != nil {
			return err
		}
		s.stops = append(s.stops, p.Close)
		idemPool = p
	}

	a := api.New(api.Config{
		Log:             s.log,
		Pool:            s.pool,
		IdempotencyPool: idemPool,
		Clock:           clk,
		Auth:            authSvc,
		RateLimit:       s.cfg.RateLimit,
		RateBurst:       s.cfg.RateBurst,
		Throttle:        throttle,
		Services: api.Services{
			Graph:     graphSvc,
			Leases:    leaseSvc,
			Attention: attentionSvc,
			Notifier:  notifier,
		},
	})
	a.Mount(s.echo)

	// The web UI at "/" (package web) and the --demo project.
	if err := s.mountWeb(ctx, authSvc, throttle, graphSvc, leaseSvc, attentionSvc); err != nil {
		return err
	}

	janitor := a.Janitor(time.Hour)
	janitor.Start(context.Background())
	s.stops = append(s.stops, janitor.Stop)
	return nil
}

// bootstrap makes sure the operator's bootstrap token exists, or, on a
// first start (no token at all and no bootstrap token), creates the
// "default" project and an admin token and shows it once.
func (s *Server) bootstrap(ctx context.Context, svc *auth.Service) error {
	if s.cfg.BootstrapToken != "" {
		created, revoked, err := svc.EnsureBootstrap(ctx, s.cfg.BootstrapToken)
		if err != nil {
			return err
		}
		switch {
		case revoked:
			s.log.Warn("the bootstrap token (WORKGRAPH_BOOTSTRAP_TOKEN) was revoked and stays revoked; choose a new one")
		case created:
			s.log.Info("created the admin token given by WORKGRAPH_BOOTSTRAP_TOKEN")
		}
		return nil
	}
	bearer, err := svc.FirstStart(ctx)
	if err != nil || bearer == "" {
		return err
	}
	// Shown once the listener is bound, with the real address.
	s.firstToken = bearer
	return nil
}

// announceFirstToken prints the token made at first start, once, next to
// the address of the UI.
func (s *Server) announceFirstToken() {
	if s.firstToken == "" {
		return
	}
	s.log.Warn("first start: created project \""+auth.DefaultProject+"\" and an admin token; it is shown only this once, keep it",
		"token", s.firstToken, "ui", s.URL()+"/",
		"hint", "sign in to the UI with it, or use it as WORKGRAPH_TOKEN / Authorization: Bearer")
	s.firstToken = ""
}
