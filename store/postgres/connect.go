package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
)

// waitingConnector connects through Connector and tries again when Postgres refuses a
// connection as one too many (53300, too_many_connections): a backend whose client has closed
// still counts against max_connections and a role's limit until it has exited, which on a loaded
// server takes a while, and replicas restarting in a rolling deploy overlap briefly. It pauses
// 50 ms, doubling to at most 1 s, for at most patience in all, then returns the refusal.
type waitingConnector struct {
	driver.Connector
	patience time.Duration
	wait     func(context.Context, time.Duration) error // nil: a timer
	writes   *atomic.Uint64                             // the writes its connections count (writes.go); nil: none
}

func (w waitingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	var waited time.Duration
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		c, err := w.Connector.Connect(ctx)
		var pe *pq.Error
		if err == nil {
			return countWrites(c, w.writes), nil
		}
		if !errors.As(err, &pe) || pe.Code != "53300" || waited+delay > w.patience {
			return c, err
		}
		if err := w.pause(ctx, delay); err != nil {
			return nil, err
		}
		waited += delay
	}
}

func (w waitingConnector) pause(ctx context.Context, d time.Duration) error {
	if w.wait != nil {
		return w.wait(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
