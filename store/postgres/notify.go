package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

var _ store.JobWaker = (*Store)(nil)

// ErrNoWakeUps is WakeOnJobs' answer when a notification sent through the store's pool did not
// reach its LISTEN: the listener's connection goes through a transaction pooler, which hands a
// LISTEN's server connection to other clients once the statement is done.
var ErrNoWakeUps = errors.New("a test notification sent through DATABASE_URL did not reach LISTEN " +
	"(a transaction pooler in between?): set DATABASE_DIRECT_URL to a direct connection")

// wakeUpProbe bounds the wait for WakeOnJobs' test notification. On a direct connection it
// arrives in milliseconds; a loaded machine that takes longer only makes the process poll.
var wakeUpProbe = 3 * time.Second

// WakeOnJobs is ListenJobs on the store's direct DSN (Pool.Direct, else its own), once a test
// notification sent through the store's pool has come back through it: behind a transaction
// pooler a LISTEN hears nothing and fails silently, so without a direct connection the answer
// is ErrNoWakeUps and the dispatchers only poll.
func (p *Store) WakeOnJobs(ctx context.Context, onError func(error)) (<-chan struct{}, error) {
	lctx, cancel := context.WithCancel(ctx)
	wake, err := ListenJobs(lctx, p.direct, onError)
	if err != nil {
		cancel()
		return nil, err
	}
	if _, err := p.db.ExecContext(ctx, `SELECT pg_notify($1, 'probe')`, NotifyChannel); err != nil {
		cancel()
		return nil, err
	}
	t := time.NewTimer(wakeUpProbe)
	defer t.Stop()
	select {
	case <-wake: // this probe, or anyone's enqueue: either way LISTEN hears
		context.AfterFunc(ctx, cancel) // the listener ends with ctx
		return wake, nil
	case <-t.C:
		cancel()
		return nil, ErrNoWakeUps
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	}
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
	go follow(ctx, l, func(*pq.Notification) { poke() })
	return wake, nil
}

// follow hands each of l's notifications to on (nil after a reconnect) until ctx ends, then
// closes l; it pings the connection every 90 s, so that a dead one is noticed and made again.
func follow(ctx context.Context, l *pq.Listener, on func(*pq.Notification)) {
	defer l.Close()
	ping := time.NewTicker(90 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-l.Notify:
			on(n)
		case <-ping.C:
			go l.Ping()
		}
	}
}
