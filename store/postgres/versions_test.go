package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sitepulse/store"
	"sitepulse/store/postgres"
	"sitepulse/store/storetest"
)

// A replica that follows the sites' versions (migration 059: LISTEN/NOTIFY) answers a budget
// check and MCP's latest-scan read of a site it holds with no statement; another replica's write
// reaches it with its notification, its own writes at once; a site deleted elsewhere is not
// answered once its notification came.
func TestFollowedVersionsSendNoStatement(t *testing.T) {
	a, dsn := storetest.PostgresDSN(t) // the writing replica: reads the version every time
	b, sent := storetest.CountingOpen(t, dsn)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	must(t, b.FollowSiteVersions(ctx, func(err error) { t.Logf("listener: %v", err) }))

	u := newUser(t, a, "follow@example.com")
	site := newSite(t, a, u, "followed")
	key, hash := store.NewSecret("svc_")
	must(t, a.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: u.ID, Name: "ci", KeyHash: hash, Prefix: key[:12], Scope: store.ScopeAll, CreatedAt: t0}))

	check := func(p *postgres.Store) (int64, error) {
		t.Helper()
		in, err := p.BudgetInputsByKey(ctx, hash, site.ID, t0)
		return in.Version, err
	}
	keyCtx := store.WithPrincipal(ctx, store.Principal{UserID: u.ID, KeyWorkspaceID: store.PersonalWorkspace(u.ID)})
	mcp := func(p *postgres.Store) (int64, error) { // MCP with the API key
		t.Helper()
		in, err := p.BudgetInputs(keyCtx, u.ID, site.ID)
		return in.Version, err
	}
	// quiet waits until a read sends no statement (its first reads load what it keeps).
	quiet := func(name string, read func(*postgres.Store) (int64, error)) int64 {
		t.Helper()
		var v int64
		storetest.WaitFor(t, name+" answered with no statement", func() bool {
			sent.Reset()
			var err error
			if v, err = read(b); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return len(sent.Sent()) == 0
		})
		return v
	}
	v0 := quiet("a budget check", check)
	if v := quiet("MCP's read", mcp); v != v0 {
		t.Fatalf("MCP's read at %d, the budget check's at %d", v, v0)
	}

	// A session's or an OAuth token's read asks the version every time: a member's removal
	// is effective on their next request on every replica.
	for _, c := range []context.Context{ctx, store.WithPrincipal(ctx, store.Principal{UserID: u.ID})} {
		sent.Reset()
		if _, err := b.BudgetInputs(c, u.ID, site.ID); err != nil {
			t.Fatal(err)
		}
		if got := sent.Sent(); len(got) != 1 || !strings.HasPrefix(got[0], "SELECT site_version(") {
			t.Errorf("a read without an API key sent %q, want the site's version", got)
		}
	}

	// Another replica's write: seen when its notification arrives.
	must(t, a.SetBudgets(ctx, u.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 90}}))
	var v1 int64
	storetest.WaitFor(t, "the other replica's budget seen", func() bool {
		var err error
		v1, err = check(b)
		must(t, err)
		return v1 > v0
	})
	if v, err := mcp(b); err != nil || v != v1 {
		t.Errorf("MCP's read after the notification: %d, %v; want %d", v, err, v1)
	}
	quiet("a budget check at the new version", check)

	// Its own write: seen at once, whenever the notification comes.
	must(t, b.SetBudgets(ctx, u.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 80}}))
	if v2, err := check(b); err != nil || v2 <= v1 {
		t.Errorf("the replica's own write, read at once: version %d, %v; want past %d", v2, err, v1)
	}
	quiet("a budget check after its own write", check)

	// The site deleted on the other replica: not found once the notification came.
	must(t, a.DeleteSite(ctx, u.ID, site.ID))
	storetest.WaitFor(t, "the deletion seen", func() bool {
		_, err := check(b)
		return errors.Is(err, store.ErrNotFound)
	})
	if _, err := mcp(b); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("MCP's read of the deleted site = %v, want not found", err)
	}
}

// A replica whose listener lost its connection reads the version every time until it is back
// and listening again: what was notified meanwhile is not missed. The job wake-ups share that
// one connection.
func TestVersionsReadWhileTheListenerIsAway(t *testing.T) {
	a, dsn := storetest.PostgresDSN(t)
	proxy := storetest.NewProxy(t, storetest.DirectDSN(dsn))
	b, err := postgres.Open(context.Background(), dsn, postgres.Pool{MaxConns: 4, Direct: proxy.DSN(storetest.DirectDSN(dsn))})
	must(t, err)
	defer b.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	must(t, b.FollowSiteVersions(ctx, nil))
	if !b.FollowingVersions() {
		t.Fatal("not following after FollowSiteVersions")
	}
	if _, err := b.WakeOnJobs(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// One LISTEN connection a process: the job wake-ups share the versions' (the migrations'
	// connection through the proxy is closed).
	storetest.WaitFor(t, "one direct connection", func() bool { return proxy.Conns() == 1 })

	u := newUser(t, a, "away@example.com")
	site := newSite(t, a, u, "away")
	key, hash := store.NewSecret("svc_")
	must(t, a.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: u.ID, Name: "ci", KeyHash: hash, Prefix: key[:12], Scope: store.ScopeAll, CreatedAt: t0}))
	check := func() int64 {
		t.Helper()
		in, err := b.BudgetInputsByKey(ctx, hash, site.ID, t0)
		must(t, err)
		return in.Version
	}
	v0 := check()
	check()

	proxy.Cut()
	storetest.WaitFor(t, "the listener's loss noticed", func() bool { return !b.FollowingVersions() })
	must(t, a.SetBudgets(ctx, u.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 90}}))
	v1 := check() // no notification can come: the statement answers
	if v1 <= v0 {
		t.Fatalf("while the listener is away: version %d, want past %d", v1, v0)
	}

	proxy.Restore()
	storetest.WaitFor(t, "the listener back", b.FollowingVersions)
	check()
	must(t, a.SetBudgets(ctx, u.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 80}}))
	storetest.WaitFor(t, "a write after the reconnect seen", func() bool { return check() > v1 })
}
