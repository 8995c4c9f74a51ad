package storetest_test

import (
	"errors"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestSingleSignOn is the contract of identities, single sign-on sessions and workspace rules
// (DESIGN §21) on every backend.
func TestSingleSignOn(t *testing.T) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"an identity is (issuer, subject): made with its account, found by both, bound once", testIdentities},
		{"a vouch re-checks the identity's sessions; a lost vouch ends them and no others", testVouch},
		{"only an owner sets the rule; members read it; strangers get not found; a verified domain is one workspace's", testWorkspaceRule},
		{"the just-in-time join adds a member once, with the rule's role", testJustInTime},
		{"only an owner sets or removes a workspace's provider, never while it is required; one issuer names one workspace's; found by both", testWorkspaceProvider},
	}
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, b.Open(t)) })
			}
		})
	}
}

const iss = "https://idp.example.com"

func testIdentities(t *testing.T, s store.Store) {
	u := store.User{ID: store.NewID(), Email: "Pat@Example.com", CreatedAt: t0}
	must(t, s.CreateIdentityUser(ctx, u, store.Identity{Issuer: iss, Subject: "p-1", Email: "pat@example.com", CreatedAt: t0, CheckedAt: t0}))
	got, err := s.Identity(ctx, iss, "p-1")
	if err != nil || got.UserID != u.ID || got.LostAt != nil || !got.CheckedAt.Equal(t0) {
		t.Fatalf("identity: %+v, %v", got, err)
	}
	if _, err := s.UserByEmail(ctx, "pat@example.com"); err != nil {
		t.Fatalf("the account was not made: %v", err)
	}
	if _, err := s.Workspace(ctx, u.ID, store.PersonalWorkspace(u.ID)); err != nil {
		t.Fatalf("no personal workspace: %v", err)
	}
	// Another issuer's same subject is another person.
	if _, err := s.Identity(ctx, "https://other.example", "p-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another issuer's p-1: %v, want not found", err)
	}
	other := newUser(t, s, "other@example.com")
	if err := s.LinkIdentity(ctx, store.Identity{Issuer: iss, Subject: "p-1", UserID: other.ID, CreatedAt: t0, CheckedAt: t0}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("binding a bound identity again: %v, want conflict", err)
	}
	must(t, s.LinkIdentity(ctx, store.Identity{Issuer: iss, Subject: "o-1", UserID: other.ID, CreatedAt: t0, CheckedAt: t0}))
	if err := s.LinkIdentity(ctx, store.Identity{Issuer: iss, Subject: "o-2", UserID: other.ID, CreatedAt: t0, CheckedAt: t0}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second identity at one issuer: %v, want conflict", err)
	}
	if err := s.CreateIdentityUser(ctx, store.User{ID: store.NewID(), Email: "new@example.com", CreatedAt: t0},
		store.Identity{Issuer: iss, Subject: "o-1", CreatedAt: t0, CheckedAt: t0}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a new account for a bound identity: %v, want conflict", err)
	}
	if _, err := s.UserByEmail(ctx, "new@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused account was kept: %v", err)
	}
	ids, err := s.IdentitiesOf(ctx, other.ID)
	if err != nil || len(ids) != 1 || ids[0].Subject != "o-1" {
		t.Fatalf("identities of other: %+v, %v", ids, err)
	}
}

func ssoSession(t *testing.T, s store.Store, u store.User, subject string, at time.Time) string {
	t.Helper()
	_, hash := store.NewSecret("")
	must(t, s.CreateSession(ctx, store.Session{TokenHash: hash, UserID: u.ID, CSRF: "c", CreatedAt: at, ExpiresAt: at.Add(30 * 24 * time.Hour),
		SSOIssuer: iss, SSOSubject: subject, SSOCheckedAt: at}))
	return hash
}

func testVouch(t *testing.T, s store.Store) {
	u := store.User{ID: store.NewID(), Email: "pat@example.com", CreatedAt: t0}
	must(t, s.CreateIdentityUser(ctx, u, store.Identity{Issuer: iss, Subject: "p-1", CreatedAt: t0, CheckedAt: t0}))
	sso := ssoSession(t, s, u, "p-1", t0)
	password := session(t, s, u, t0)
	got, err := s.SessionByHash(ctx, sso, t0)
	if err != nil || got.SSOIssuer != iss || got.SSOSubject != "p-1" || !got.SSOCheckedAt.Equal(t0) {
		t.Fatalf("sso session: %+v, %v", got, err)
	}
	if p, _ := s.SessionByHash(ctx, password, t0); p.SSOIssuer != "" || !p.SSOCheckedAt.IsZero() {
		t.Fatalf("a password session reads as SSO: %+v", p)
	}
	later := t0.Add(time.Hour)
	must(t, s.Vouched(ctx, iss, "p-1", "sealed-2", later))
	if got, _ := s.SessionByHash(ctx, sso, t0); !got.SSOCheckedAt.Equal(later) {
		t.Fatalf("session checked at %v, want %v", got.SSOCheckedAt, later)
	}
	if id, _ := s.Identity(ctx, iss, "p-1"); id.RefreshSealed != "sealed-2" || !id.CheckedAt.Equal(later) {
		t.Fatalf("identity after vouch: %+v", id)
	}
	must(t, s.LoseVouch(ctx, iss, "p-1", later))
	if live(s, sso) {
		t.Fatal("the SSO session outlived the lost vouch")
	}
	if !live(s, password) {
		t.Fatal("the lost vouch ended a password session (the workspace rule refuses it, not the store)")
	}
	if id, _ := s.Identity(ctx, iss, "p-1"); id.LostAt == nil || !id.LostAt.Equal(later) || id.RefreshSealed != "" {
		t.Fatalf("identity after the lost vouch: %+v", id)
	}
	must(t, s.Vouched(ctx, iss, "p-1", "sealed-3", later.Add(time.Hour)))
	if id, _ := s.Identity(ctx, iss, "p-1"); id.LostAt != nil {
		t.Fatalf("a new vouch left LostAt: %+v", id)
	}
	if err := s.LoseVouch(ctx, iss, "nobody", later); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown identity: %v", err)
	}
}

func testWorkspaceRule(t *testing.T, s store.Store) {
	owner, editor, stranger := newUser(t, s, "own@acme.test"), newUser(t, s, "ed@acme.test"), newUser(t, s, "x@evil.test")
	w := team(t, s, owner, "Acme", map[store.User]store.Role{editor: store.RoleEditor})
	empty, err := s.WorkspaceSSO(ctx, editor.ID, w.ID)
	if err != nil || empty.WorkspaceID != w.ID || empty.Domain != "" || empty.RequiredAt != nil {
		t.Fatalf("no rule yet: %+v, %v", empty, err)
	}
	v := t0
	rule := store.WorkspaceSSO{WorkspaceID: w.ID, Domain: "acme.test", Token: "tok", VerifiedAt: &v, RequiredAt: &v, JITRole: store.RoleViewer, UpdatedAt: t0}
	if err := s.SetWorkspaceSSO(ctx, editor.ID, rule); !errors.Is(err, store.ErrForbidden) {
		t.Fatalf("an editor sets the rule: %v, want forbidden", err)
	}
	if err := s.SetWorkspaceSSO(ctx, stranger.ID, rule); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a stranger sets the rule: %v, want not found", err)
	}
	if _, err := s.WorkspaceSSO(ctx, stranger.ID, w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a stranger reads the rule: %v, want not found", err)
	}
	must(t, s.SetWorkspaceSSO(ctx, owner.ID, rule))
	got, err := s.SSORule(ctx, w.ID)
	if err != nil || got.Domain != "acme.test" || got.RequiredAt == nil || got.JITRole != store.RoleViewer || !got.Requires("ed@ACME.test") || got.Requires("x@evil.test") {
		t.Fatalf("rule: %+v, %v", got, err)
	}
	other := team(t, s, stranger, "Evil", nil)
	if err := s.SetWorkspaceSSO(ctx, stranger.ID, store.WorkspaceSSO{WorkspaceID: other.ID, Domain: "acme.test", VerifiedAt: &v, UpdatedAt: t0}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("another workspace verifies the same domain: %v, want conflict", err)
	}
	rules, err := s.SSORulesForDomain(ctx, "acme.test")
	if err != nil || len(rules) != 1 || rules[0].WorkspaceID != w.ID {
		t.Fatalf("rules for acme.test: %+v, %v", rules, err)
	}
}

func testJustInTime(t *testing.T, s store.Store) {
	owner, pat := newUser(t, s, "own@acme.test"), newUser(t, s, "pat@acme.test")
	w := team(t, s, owner, "Acme", nil)
	joined, err := s.JoinJustInTime(ctx, w.ID, pat.ID, store.RoleViewer, t0)
	if err != nil || !joined {
		t.Fatalf("join: %v, %v", joined, err)
	}
	if ws, err := s.Workspace(ctx, pat.ID, w.ID); err != nil || ws.Role != store.RoleViewer {
		t.Fatalf("pat's role: %+v, %v", ws, err)
	}
	if joined, err := s.JoinJustInTime(ctx, w.ID, owner.ID, store.RoleViewer, t0); err != nil || joined {
		t.Fatalf("an owner joining again: %v, %v (must not be demoted)", joined, err)
	}
	if ws, _ := s.Workspace(ctx, owner.ID, w.ID); ws.Role != store.RoleOwner {
		t.Fatalf("the owner became %s", ws.Role)
	}
}

func testWorkspaceProvider(t *testing.T, s store.Store) {
	owner, editor, stranger := newUser(t, s, "own@acme.test"), newUser(t, s, "ed@acme.test"), newUser(t, s, "x@evil.test")
	w := team(t, s, owner, "Acme", map[store.User]store.Role{editor: store.RoleEditor})
	if _, err := s.WorkspaceProviderOf(ctx, w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no provider yet: %v, want not found", err)
	}
	if exists, err := s.AnyWorkspaceProvider(ctx); err != nil || exists {
		t.Fatalf("any provider before one is set: %v, %v", exists, err)
	}
	p := store.WorkspaceProvider{WorkspaceID: w.ID, Issuer: "https://id.acme.test", ClientID: "sp", SecretSealed: "sealed", UpdatedAt: t0}
	if err := s.SetWorkspaceProvider(ctx, editor.ID, p); !errors.Is(err, store.ErrForbidden) {
		t.Fatalf("an editor sets the provider: %v, want forbidden", err)
	}
	if err := s.SetWorkspaceProvider(ctx, stranger.ID, p); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a stranger sets the provider: %v, want not found", err)
	}
	must(t, s.SetWorkspaceProvider(ctx, owner.ID, p))
	if exists, err := s.AnyWorkspaceProvider(ctx); err != nil || !exists {
		t.Fatalf("any provider after one is set: %v, %v", exists, err)
	}
	p.ClientID = "sp-2"
	must(t, s.SetWorkspaceProvider(ctx, owner.ID, p)) // replaced, not added
	got, err := s.WorkspaceProviderOf(ctx, w.ID)
	if err != nil || got.Issuer != p.Issuer || got.ClientID != "sp-2" || got.SecretSealed != "sealed" || !got.UpdatedAt.Equal(t0) {
		t.Fatalf("provider: %+v, %v", got, err)
	}
	if got, err := s.WorkspaceProviderByIssuer(ctx, "https://id.acme.test"); err != nil || got.WorkspaceID != w.ID {
		t.Fatalf("by issuer: %+v, %v", got, err)
	}
	if _, err := s.WorkspaceProviderByIssuer(ctx, "https://id.other.test"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unknown issuer: %v, want not found", err)
	}
	other := team(t, s, stranger, "Evil", nil)
	if err := s.SetWorkspaceProvider(ctx, stranger.ID, store.WorkspaceProvider{WorkspaceID: other.ID, Issuer: p.Issuer, ClientID: "x", SecretSealed: "y", UpdatedAt: t0}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("another workspace takes the same issuer: %v, want conflict", err)
	}
	if _, err := s.WorkspaceProviderOf(ctx, "not-a-uuid"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a malformed id: %v, want not found", err)
	}

	// Removing it: only an owner, never while the workspace requires single sign-on (the
	// requirement is met through it), and a workspace without one has nothing to remove.
	now := t0
	must(t, s.SetWorkspaceSSO(ctx, owner.ID, store.WorkspaceSSO{WorkspaceID: w.ID, Domain: "acme.test", Token: "t", VerifiedAt: &now, RequiredAt: &now, UpdatedAt: now}))
	if _, err := s.RemoveWorkspaceProvider(ctx, editor.ID, w.ID); !errors.Is(err, store.ErrForbidden) {
		t.Fatalf("an editor removes the provider: %v, want forbidden", err)
	}
	if _, err := s.RemoveWorkspaceProvider(ctx, stranger.ID, w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a stranger removes the provider: %v, want not found", err)
	}
	if _, err := s.RemoveWorkspaceProvider(ctx, owner.ID, w.ID); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the owner removes the provider the workspace requires: %v, want conflict", err)
	}
	if _, err := s.WorkspaceProviderOf(ctx, w.ID); err != nil {
		t.Fatalf("the provider after the refusals: %v", err)
	}
	must(t, s.SetWorkspaceSSO(ctx, owner.ID, store.WorkspaceSSO{WorkspaceID: w.ID, Domain: "acme.test", Token: "t", VerifiedAt: &now, UpdatedAt: now}))
	removed, err := s.RemoveWorkspaceProvider(ctx, owner.ID, w.ID)
	if err != nil || removed.Issuer != p.Issuer || removed.WorkspaceID != w.ID {
		t.Fatalf("the owner removes the provider: %+v, %v", removed, err)
	}
	if _, err := s.WorkspaceProviderOf(ctx, w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the provider after its removal: %v, want not found", err)
	}
	if _, err := s.WorkspaceProviderByIssuer(ctx, p.Issuer); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the removed provider by issuer: %v, want not found", err)
	}
	if exists, err := s.AnyWorkspaceProvider(ctx); err != nil || exists {
		t.Fatalf("any provider after the removal: %v, %v", exists, err)
	}
	if _, err := s.RemoveWorkspaceProvider(ctx, owner.ID, w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("removing it again: %v, want not found", err)
	}
	// Its issuer is free for another workspace.
	must(t, s.SetWorkspaceProvider(ctx, stranger.ID, store.WorkspaceProvider{WorkspaceID: other.ID, Issuer: p.Issuer, ClientID: "x", SecretSealed: "y", UpdatedAt: t0}))
}
