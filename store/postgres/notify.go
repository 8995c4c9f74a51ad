package postgres

import (
	"context"
	"errors"
	"slices"
	"sync"
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

// WakeOnJobs is ListenJobs on the store's LISTEN connection (Pool.Direct, else its own DSN), once a test
// notification sent through the store's pool has come back through it: behind a transaction
// pooler a LISTEN hears nothing and fails silently, so without a direct connection the answer
// is ErrNoWakeUps and the dispatchers only poll.
func (p *Store) WakeOnJobs(ctx context.Context, onError func(error)) (<-chan struct{}, error) {
	lctx, cancel := context.WithCancel(ctx)
	wake, err := listenJobs(lctx, p.notes, onError)
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
	return listenJobs(ctx, &notifier{dsn: dsn}, onError)
}

// listenJobs is ListenJobs on n's connection.
func listenJobs(ctx context.Context, n *notifier, onError func(error)) (<-chan struct{}, error) {
	wake := make(chan struct{}, 1)
	poke := func(*pq.Notification) { // a job, or a reconnect (nil)
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	if err := n.subscribe(ctx, NotifyChannel, poke, errorsTo(onError)); err != nil {
		return nil, err
	}
	return wake, nil
}

// errorsTo is a listener's event callback that hands its errors to onError (nil: none).
func errorsTo(onError func(error)) func(pq.ListenerEventType, error) {
	return func(_ pq.ListenerEventType, err error) {
		if err != nil && onError != nil {
			onError(err)
		}
	}
}

// notifier is one LISTEN connection to dsn, shared by the channels a process follows (the job
// wake-ups, the sites' versions): one direct connection a process, not one a channel. It
// connects at the first subscription and closes when the last one's context ends.
type notifier struct {
	dsn string

	mu   sync.Mutex
	l    *pq.Listener
	stop context.CancelFunc
	subs []*subscription
}

type subscription struct {
	channel string
	on      func(*pq.Notification)            // each notification of the channel; nil after a reconnect
	event   func(pq.ListenerEventType, error) // the connection's events
}

// subscribe calls on with each notification of channel (and with nil after every reconnect:
// what was sent meanwhile is lost), and event with the connection's events, until ctx ends.
func (n *notifier) subscribe(ctx context.Context, channel string, on func(*pq.Notification), event func(pq.ListenerEventType, error)) error {
	s := &subscription{channel: channel, on: on, event: event}
	n.mu.Lock()
	if n.l == nil {
		n.l = pq.NewListener(n.dsn, time.Second, 30*time.Second, n.eventAll)
		lctx, cancel := context.WithCancel(context.Background())
		n.stop = cancel
		go follow(lctx, n.l, n.dispatch)
	}
	first := !slices.ContainsFunc(n.subs, func(o *subscription) bool { return o.channel == channel })
	n.subs = append(n.subs, s)
	l := n.l
	n.mu.Unlock()
	if first {
		if err := l.Listen(channel); err != nil && !errors.Is(err, pq.ErrChannelAlreadyOpen) {
			n.remove(s)
			return err
		}
	}
	context.AfterFunc(ctx, func() { n.remove(s) })
	return nil
}

// remove ends s: its channel is no longer listened to when it was the last on it, and the
// connection closes when it was the last of all.
func (n *notifier) remove(s *subscription) {
	n.mu.Lock()
	defer n.mu.Unlock()
	i := slices.Index(n.subs, s)
	if i < 0 {
		return
	}
	n.subs = slices.Delete(n.subs, i, i+1)
	if len(n.subs) == 0 {
		n.stop() // follow closes the listener
		n.l, n.stop = nil, nil
		return
	}
	if !slices.ContainsFunc(n.subs, func(o *subscription) bool { return o.channel == s.channel }) {
		go n.l.Unlisten(s.channel) // not under mu: it waits for the connection
	}
}

// dispatch hands a notification to its channel's subscriptions, a reconnect (nil) to all.
func (n *notifier) dispatch(nt *pq.Notification) {
	n.mu.Lock()
	subs := slices.Clone(n.subs)
	n.mu.Unlock()
	for _, s := range subs {
		if nt == nil || nt.Channel == s.channel {
			s.on(nt)
		}
	}
}

// eventAll hands the connection's events to every subscription.
func (n *notifier) eventAll(ev pq.ListenerEventType, err error) {
	n.mu.Lock()
	subs := slices.Clone(n.subs)
	n.mu.Unlock()
	for _, s := range subs {
		if s.event != nil {
			s.event(ev, err)
		}
	}
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
