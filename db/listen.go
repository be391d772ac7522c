package db

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Listen holds one dedicated connection (configured like pool's) with
// LISTEN channel until ctx ends, and reconnects with a capped backoff when
// the connection is lost. After each successful LISTEN it calls listening;
// each notification's payload goes to note; when a connection is lost it
// calls lost before waiting to reconnect. Notifications sent while no
// connection listened are lost: listening is where callers catch up.
// The callbacks run on Listen's goroutine. Listen returns when ctx ends.
func Listen(ctx context.Context, pool *pgxpool.Pool, channel string, log *slog.Logger,
	listening func(), note func(payload string), lost func()) {
	if log == nil {
		log = slog.Default()
	}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := listenOnce(ctx, pool, channel, listening, note)
		lost()
		if ctx.Err() != nil {
			return
		}
		log.Warn("LISTEN connection lost; reconnecting", "channel", channel, "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func listenOnce(ctx context.Context, pool *pgxpool.Pool, channel string, listening func(), note func(string)) error {
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		note(n.Payload)
	}
}
