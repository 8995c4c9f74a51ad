package postgres

import (
	"context"
	"database/sql"
	"errors"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
)

// A budget check and MCP's latest-scan read ask one thing of the database when the process
// already holds the site's inputs: the site's version (site_version). A process that follows
// the sites' versions (FollowSiteVersions: LISTEN on sitepulse_site_version, migration 059,
// on a direct connection) answers that from the version it last read, with no statement, while
//
//   - no notification for the site has come since it was read (a notification comes at the
//     commit of every write that moves the version: a scan completed or deleted, a budget or an
//     alert rule written, the site renamed, moved or deleted, a member leaving its workspace);
//   - none of the process's own statements that may write has completed since (writes,
//     counted by the connections: a write is seen by its own process at once, before its
//     notification comes back);
//   - the listener has been connected all along (a reconnect forgets everything: what was
//     sent meanwhile is lost);
//   - and it was read less than KeyCacheFor ago: the bound a revoked key already has, kept
//     should notifications ever stop silently.
//
// So another replica's write is seen when its notification arrives (a millisecond on a direct
// connection) and at most KeyCacheFor after it; this process's own at once. Behind a
// transaction pooler without DATABASE_DIRECT_URL the process does not follow, and reads the
// version every time, as before.

// versionChannel is the channel migration 059's triggers notify.
const versionChannel = "sitepulse_site_version"

// versionReadPrefix starts the statements that read a site's version (versionCall): reads only,
// which the connections do not count as writes.
const versionReadPrefix = "SELECT site_version"

// maxFollowedSites bounds the versions a process holds; a full map starts over.
const maxFollowedSites = 10_000

// versionFeed holds the sites' versions as last read, and what makes each one stale.
type versionFeed struct {
	live   atomic.Bool // the listener is connected and listening
	writes atomic.Uint64
	seed   maphash.Seed
	// gens moves a stripe of sites on each notification, every stripe on a reconnect: a version
	// read while its stripe moved is not kept.
	gens [256]atomic.Uint64
	now  func() time.Time

	mu    sync.Mutex
	sites map[string]heldVersion
}

type heldVersion struct {
	version   int64
	workspace string
	gen       uint64 // the site's stripe's gen before the read
	writes    uint64 // the process's writes before the read
	at        time.Time
}

// readMark is what a version read notes before its statement.
type readMark struct{ gen, writes uint64 }

func newVersionFeed() *versionFeed {
	return &versionFeed{seed: maphash.MakeSeed(), now: time.Now, sites: map[string]heldVersion{}}
}

func (f *versionFeed) stripe(site string) *atomic.Uint64 {
	return &f.gens[maphash.String(f.seed, site)%uint64(len(f.gens))]
}

// get is site's version in workspace as held, when it may answer for the database.
func (f *versionFeed) get(site, workspace string) (int64, bool) {
	if !f.live.Load() {
		return 0, false
	}
	f.mu.Lock()
	h, ok := f.sites[site]
	f.mu.Unlock()
	if !ok || h.workspace != workspace || h.gen != f.stripe(site).Load() || h.writes != f.writes.Load() {
		return 0, false
	}
	if d := f.now().Sub(h.at); d >= KeyCacheFor || d <= -KeyCacheFor {
		return 0, false
	}
	return h.version, true
}

// mark notes the site's stripe and the process's writes before a read of its version.
func (f *versionFeed) mark(site string) readMark {
	return readMark{gen: f.stripe(site).Load(), writes: f.writes.Load()}
}

// put holds the version read after m, unless the site was notified meanwhile or the listener
// is not connected. (A write completed meanwhile is caught by get.)
func (f *versionFeed) put(site, workspace string, version int64, m readMark) {
	if !f.live.Load() || f.stripe(site).Load() != m.gen {
		return
	}
	f.mu.Lock()
	if len(f.sites) >= maxFollowedSites {
		clear(f.sites)
	}
	f.sites[site] = heldVersion{version: version, workspace: workspace, gen: m.gen, writes: m.writes, at: f.now()}
	f.mu.Unlock()
}

// notified makes site's held version stale.
func (f *versionFeed) notified(site string) { f.stripe(site).Add(1) }

// reset makes every held version stale: the listener (re)connected or lost its connection.
func (f *versionFeed) reset(live bool) {
	f.live.Store(false)
	for i := range f.gens {
		f.gens[i].Add(1)
	}
	f.mu.Lock()
	clear(f.sites)
	f.mu.Unlock()
	f.live.Store(live)
}

// siteVersion is site_version(site, workspace): the held version when the feed may answer,
// else the statement (not cancellable, as the callers' reads; see BudgetInputsByKey).
func (p *Store) siteVersion(ctx context.Context, site, workspace string) (sql.NullInt64, error) {
	if v, ok := p.versions.get(site, workspace); ok {
		return sql.NullInt64{Int64: v, Valid: true}, nil
	}
	m := p.versions.mark(site)
	var version sql.NullInt64
	err := p.db.QueryRowContext(context.WithoutCancel(ctx), versionCall("site_version", site, workspace)).Scan(&version)
	if err == nil && version.Valid {
		p.versions.put(site, workspace, version.Int64, m)
	}
	return version, err
}

// ErrNoVersionFeed is FollowSiteVersions' answer when a notification sent through the store's
// pool did not reach its LISTEN (a transaction pooler in between, as ErrNoWakeUps).
var ErrNoVersionFeed = errors.New("a test notification sent through DATABASE_URL did not reach LISTEN " +
	"(a transaction pooler in between?): set DATABASE_DIRECT_URL to a direct connection; " +
	"budget checks read the site's version every time")

// FollowSiteVersions LISTENs on sitepulse_site_version on the process's LISTEN connection (the
// store's direct DSN, shared with the job wake-ups) until ctx ends, so that budget checks and
// MCP's latest-scan reads answer from the versions the process holds (see above). It returns
// once a test notification sent through the store's pool has come back, or ErrNoVersionFeed;
// onError hears the listener's connection errors.
func (p *Store) FollowSiteVersions(ctx context.Context, onError func(error)) error {
	f := p.versions
	heard := make(chan struct{}, 1)
	var following atomic.Bool // the probe came back, and ctx has not ended
	probe := "probe " + time.Now().Format(time.RFC3339Nano)
	on := func(n *pq.Notification) {
		switch {
		case n == nil: // reconnected: what was sent meanwhile is lost
			if following.Load() {
				f.reset(true)
			}
		case n.Extra == probe:
			select {
			case heard <- struct{}{}:
			default:
			}
		default:
			f.notified(n.Extra)
		}
	}
	event := func(ev pq.ListenerEventType, err error) {
		if err != nil && onError != nil {
			onError(err)
		}
		if ev == pq.ListenerEventDisconnected || ev == pq.ListenerEventConnectionAttemptFailed {
			f.reset(false)
		}
	}
	lctx, cancel := context.WithCancel(ctx)
	if err := p.notes.subscribe(lctx, versionChannel, on, event); err != nil {
		cancel()
		return err
	}
	if _, err := p.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, versionChannel, probe); err != nil {
		cancel()
		return err
	}
	t := time.NewTimer(wakeUpProbe)
	defer t.Stop()
	select {
	case <-heard:
	case <-t.C:
		cancel()
		return ErrNoVersionFeed
	case <-ctx.Done():
		cancel()
		return ctx.Err()
	}
	following.Store(true)
	f.reset(true)
	context.AfterFunc(ctx, func() {
		following.Store(false)
		cancel()
		f.reset(false)
	})
	return nil
}
