package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/postgres"
	"sitepulse/store/storetest"
)

// A revoked API key is refused by every replica within a second (issue 36): each process answers
// a key from its last lookup for at most postgres.KeyCacheFor (half a second, on the callers'
// clock), and the one that revokes it forgets it at once.
func TestRevokedKeyIsRefusedByEveryReplicaWithinHalfASecond(t *testing.T) {
	a, dsn := storetest.PostgresDSN(t)
	b := storetest.Open(t, dsn) // another replica on the same database
	ctx := context.Background()
	u := newUser(t, a, "replicas@example.com")
	site := newSite(t, a, u, "replicas")
	key, hash := store.NewSecret("svc_")
	k := store.APIKey{ID: store.NewID(), UserID: u.ID, Name: "ci", KeyHash: hash, Prefix: key[:12], Scope: store.ScopeAll, CreatedAt: t0}
	must(t, a.CreateAPIKey(ctx, k))
	for _, p := range []*postgres.Store{a, b} { // both replicas hold the key now
		if _, err := p.APIKeyByHash(ctx, hash, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := p.BudgetInputsByKey(ctx, hash, site.ID, t0); err != nil {
			t.Fatal(err)
		}
	}
	must(t, a.RevokeAPIKey(ctx, u.ID, k.ID, t0))

	refused := func(p *postgres.Store, name string, now int) {
		t.Helper()
		at := t0.Add(time.Duration(now) * time.Millisecond)
		if _, err := p.APIKeyByHash(ctx, hash, at); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s, %d ms after the revocation: APIKeyByHash = %v, want not found", name, now, err)
		}
		if _, err := p.BudgetInputsByKey(ctx, hash, site.ID, at); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s, %d ms after the revocation: BudgetInputsByKey = %v, want not found", name, now, err)
		}
	}
	refused(a, "the revoking replica", 0)
	refused(b, "another replica", int(postgres.KeyCacheFor.Milliseconds()))
}
