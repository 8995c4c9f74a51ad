package postgres

import (
	"context"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

var _ store.JobWaker = (*Store)(nil)

// WakeOnJobs is ListenJobs on the store's own database.
func (p *Store) WakeOnJobs(ctx context.Context, onError func(error)) (<-chan struct{}, error) {
	return ListenJobs(ctx, p.dsn, onError)
}

// ListenJobs LISTENs on NotifyChannel on its own connection to dsn and sends on the returned
// channel whenever a job is enqueued, by this process or any other, so a dispatcher wakes at
// once instead of at its next poll. It also sends after a reconnect, since notifications may
// have been missed meanwhile. Sends never block: one pending wake-up stands for many. The
// listener closes when ctx ends. Notifications are database-wide, not per schema: a dispatcher
// may wake for another schema's job and find nothing, which costs one claim query.
func ListenJobs(ctx context.Context, dsn string, onError func(error)) (<-chan struct{}, error) {
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	l := pq.NewListener(dsn, time.Second, 30*time.Second, func(ev pq.ListenerEventType, err error) {
		if err != nil && onError != nil {
			onError(err)
		}
		if ev == pq.ListenerEventReconnected {
			poke()
		}
	})
	if err := l.Listen(NotifyChannel); err != nil {
		l.Close()
		return nil, err
	}
	go func() {
		defer l.Close()
		ping := time.NewTicker(90 * time.Second)
		defer ping.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-l.Notify:
				poke()
			case <-ping.C:
				go l.Ping() // a dead connection is noticed and re-established
			}
		}
	}()
	return wake, nil
}
