package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/workgraph-dev/workgraph/api"
	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/bodygate"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/demo"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/fencekey"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/idempotency"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/logs"
	"github.com/workgraph-dev/workgraph/metrics"
	"github.com/workgraph-dev/workgraph/startstop"
	"github.com/workgraph-dev/workgraph/webhook"
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
	// One attention policy for the API and the UI.
	attentionSvc := attention.NewService(s.pool, clk, s.cfg.Attention)
	// On a Carrier: a REST step's token check (auth.Service.Lazy) rides
	// with its first statement.
	leaseSvc := lease.NewService(db.Carrying(s.pool), clk, policy)
	// The deployment's fence key, created by the first replica to start.
	signer, err := fencekey.Load(ctx, s.pool)
	if err != nil {
		return err
	}
	// A rotation (`workgraph fence rotate`) reaches every replica within
	// Config.FenceKeyRefresh (fencekey.RefreshInterval by default).
	refresh := s.cfg.FenceKeyRefresh
	if refresh <= 0 {
		refresh = fencekey.RefreshInterval
	}
	keysCtx, stopKeys := context.WithCancel(context.Background())
	keysDone := make(chan struct{})
	go func() {
		defer close(keysDone)
		startstop.Every(keysCtx, refresh, false, func(ctx context.Context) {
			if err := signer.Refresh(ctx, s.pool); err != nil && ctx.Err() == nil {
				s.log.Warn("fence keys: reading them again failed; signing with the keys read before", "err", err)
			}
		})
	}()
	s.stops = append(s.stops, func() { stopKeys(); <-keysDone })

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
	s.notifier = notifier
	s.listening = notifier.Listening()
	s.registry.MustRegister(metrics.NewWaitCollector(func() metrics.WaitStats {
		w := notifier.Stats()
		return metrics.WaitStats{Waits: w.Waits, Skipped: w.Skipped, Claims: w.Claims, Grants: w.Grants,
			Passed: w.Passed, Broadcasts: w.Broadcasts, Rechecks: w.Rechecks, Probes: w.Probes, DueWakes: w.DueWakes}
	}))
	sweeper := lease.NewSweeper(leaseSvc, s.cfg.SweepInterval, s.log)
	sweeper.Observe(s.metrics.SweepRun)
	sweeper.Start(context.Background())
	s.stops = append(s.stops, sweeper.Stop)
	deadlines := attention.NewDeadlineSweeper(attentionSvc, 0, s.log)
	deadlines.Observe(s.metrics.AttentionOverdue)
	deadlines.Start(context.Background())
	s.stops = append(s.stops, deadlines.Stop)

	// One follower of the event log for every long poll and stream of
	// this replica, web pages' included.
	follower := events.NewFollower(s.pool, s.cfg.EventsFollowInterval, s.log)
	follower.Observe(events.Observer{Polled: s.metrics.EventLogPolled, Horizon: s.metrics.HorizonComputed})
	follower.Start(context.Background())
	s.stops = append(s.stops, follower.Stop)
	s.follower = follower
	eventsReader := events.NewReader(s.pool, follower)

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
		s.registry.MustRegister(metrics.NewPoolCollector("idempotency", poolStats(p)))
	}

	hooks := webhook.NewService(s.pool, clk, s.cfg.Webhooks.AllowPrivate)
	links := webhook.NewAnswerLinks(s.pool, clk, attentionSvc)
	if !s.cfg.Webhooks.Off {
		d := webhook.NewDeliverer(s.pool, webhook.DelivererConfig{
			Clock: clk, Log: s.log, AllowPrivate: s.cfg.Webhooks.AllowPrivate, Timeout: s.cfg.Webhooks.Timeout,
			Concurrency: s.cfg.Webhooks.Concurrency, PerWebhook: s.cfg.Webhooks.PerWebhook, PublicURL: s.PublicURL(), Attention: attentionSvc, Links: links,
			Observe: s.observeDelivery,
		})
		hooks.OnEnabled(d.Wake)
		d.Start(context.Background())
		s.stops = append(s.stops, d.Stop)
	}

	// One budget of request bodies in memory for the API and the web UI.
	bodies := bodygate.New(s.cfg.BodyBytesInFlight, 0)
	a := api.New(api.Config{
		Log:             s.log,
		Pool:            s.pool,
		IdempotencyPool: idemPool,
		// The one translation of driver errors, for any a service let
		// through (api does not import db).
		TranslateUnknown: db.Translate,
		Clock:            clk,
		Auth:             authSvc,
		RateLimit:        s.cfg.RateLimit,
		RateBurst:        s.cfg.RateBurst,
		Throttle:         throttle,
		Metrics:          s.metrics,
		StreamHeartbeat:  s.cfg.EventsHeartbeat,
		StreamStall:      s.cfg.EventsStall,
		Bodies:           bodies,
		Services: api.Services{
			Graph:       graphSvc,
			Leases:      leaseSvc,
			Attention:   attentionSvc,
			Notifier:    notifier,
			Fence:       signer,
			Webhooks:    hooks,
			AnswerLinks: links,
			Events:      eventsReader,
		},
	})
	a.Mount(s.echo)

	// The web UI at "/" (package web) and the --demo project.
	if err := s.mountWeb(ctx, authSvc, throttle, bodies, graphSvc, leaseSvc, attentionSvc, hooks, links, eventsReader); err != nil {
		return err
	}

	janitor := idempotency.NewJanitor(idempotency.NewStore(idemPool, clk), time.Hour, s.log)
	janitor.Start(context.Background())
	s.stops = append(s.stops, janitor.Stop)

	retention := events.NewRetention(s.pool, clk, s.eventsRetention(), time.Hour, s.log)
	retention.Observe(s.metrics.EventsDeleted)
	retention.Start(context.Background())
	s.stops = append(s.stops, retention.Stop)

	deliveries := webhook.NewRetention(s.pool, clk, s.deliveryRetention(), time.Hour, s.log)
	deliveries.Start(context.Background())
	s.stops = append(s.stops, deliveries.Stop)
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

// announceFirstToken shows the token made at first start, once, next to
// the address of the UI: as a block of its own on Config.FirstStartOut, or
// in a log line when there is none.
func (s *Server) announceFirstToken() {
	if s.firstToken == "" {
		return
	}
	defer func() { s.firstToken = "" }()
	msg := "first start: created project \"" + auth.DefaultProject + "\" and an admin token; it is shown only this once, keep it"
	if s.cfg.FirstStartOut == nil {
		s.log.Warn(msg, "token", s.firstToken, "ui", s.URL()+"/",
			"hint", "sign in to the UI with it, or use it as WORKGRAPH_TOKEN / Authorization: Bearer")
		return
	}
	if s.cfg.FirstStartFormat == logs.FormatJSON {
		s.showJSON(msg, "project", auth.DefaultProject, "token", s.firstToken, "ui", s.URL()+"/",
			"hint", "sign in to the UI with it, or use it as WORKGRAPH_TOKEN / Authorization: Bearer")
		return
	}
	s.log.Warn(msg+" (printed below, not in the log)", "ui", s.URL()+"/")
	fmt.Fprint(s.cfg.FirstStartOut, firstTokenBlock(s.firstToken, s.URL()))
}

// showJSON shows a token on FirstStartOut as one JSON object in the log's
// JSON shape, at warn whatever the log's level: it is shown only this once.
func (s *Server) showJSON(msg string, args ...any) {
	show, err := logs.New(s.cfg.FirstStartOut, logs.FormatJSON, slog.LevelDebug)
	if err != nil {
		s.log.Error("cannot show the token", "err", err)
		return
	}
	show.Warn(msg, args...)
}

// announceDemoToken shows the human token of the demo project loaded at
// this start, once, with the address of its inbox: as the first-start
// token is shown, so that the secret stays out of the log.
func (s *Server) announceDemoToken() {
	if s.demoToken == "" {
		return
	}
	defer func() { s.demoToken = "" }()
	msg := "demo: loaded the sample project \"" + demo.Project + "\" and a human token to sign in with; it is shown only this once"
	ui := s.URL() + "/p/" + demo.Project + "/inbox"
	if s.cfg.FirstStartOut == nil {
		s.log.Warn(msg, "project", demo.Project, "token", s.demoToken, "ui", ui)
		return
	}
	if s.cfg.FirstStartFormat == logs.FormatJSON {
		s.showJSON(msg, "project", demo.Project, "token", s.demoToken, "ui", ui)
		return
	}
	s.log.Warn(msg+" (printed below, not in the log)", "project", demo.Project, "ui", ui)
	rule := strings.Repeat("=", 72)
	fmt.Fprint(s.cfg.FirstStartOut, "\n"+rule+"\n"+
		"  workgraph --demo: loaded the sample project \""+demo.Project+"\" and a human token.\n"+
		"  It is shown only this once.\n\n"+
		"    "+s.demoToken+"\n\n"+
		"  Sign in at "+ui+" with it.\n"+
		rule+"\n\n")
}

// firstTokenBlock is the first-start announcement: the token alone on its
// line, easy to copy, framed apart from the log lines around it, and the
// CLI's settings for this server (base is its URL) as one line to paste.
func firstTokenBlock(token, base string) string {
	rule := strings.Repeat("=", 72)
	return "\n" + rule + "\n" +
		"  workgraph first start: created project \"" + auth.DefaultProject + "\" and an admin token.\n" +
		"  It is shown only this once: keep it.\n\n" +
		"    " + token + "\n\n" +
		"  Sign in to the UI at " + base + "/ with it. For the workgraph CLI:\n\n" +
		"    export WORKGRAPH_URL=" + base + " WORKGRAPH_TOKEN=" + token + "\n\n" +
		"  For the API: \"Authorization: Bearer <token>\".\n" +
		rule + "\n\n"
}

// eventsRetention is the configured retention of events (0: keep forever).
func (s *Server) eventsRetention() time.Duration {
	switch {
	case s.cfg.EventsRetention == 0:
		return events.DefaultRetention
	case s.cfg.EventsRetention < 0:
		return 0
	}
	return s.cfg.EventsRetention
}

// deliveryRetention is the configured retention of finished webhook
// deliveries (0: keep forever); by default the events'.
func (s *Server) deliveryRetention() time.Duration {
	switch {
	case s.cfg.Webhooks.DeliveryRetention == 0:
		return s.eventsRetention()
	case s.cfg.Webhooks.DeliveryRetention < 0:
		return 0
	}
	return s.cfg.Webhooks.DeliveryRetention
}
