package storetest_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestAccounts is the contract of what a person does to their own account (issue 34): one
// canonical form of e-mail addresses, e-mailed single-use links, password changes that end
// sessions, account deletion. The same answers from memory and Postgres.
func TestAccounts(t *testing.T) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"e-mails are kept and compared in one canonical form, with no Unicode case folding", testCanonicalEmails},
		{"a reset link works once, until it expires, and only the newest of a user's", testResetLink},
		{"of 20 parallel uses of one reset link exactly one sets the password", testResetLinkRace},
		{"a reset ends every session; a password change every session but the one kept", testPasswordEndsSessions},
		{"the OAuth grants made since the password was last set end; those before stay", testEndGrantsSince},
		{"an e-mail change link moves the account to its address once, unless another account took it", testConfirmEmail},
		{"a user lists and ends their own sessions only", testSessionsOf},
		{"deleting an account is refused while workspaces others use need it, and names them", testDeleteAccountInUse},
		{"deleting an account deletes what only it uses, hands the rest over, and frees its e-mail", testDeleteAccount},
		{"an account deleted while members leave and join its workspace answers without a deadlock", testDeleteAccountRace},
	}
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, b.Open(t)) })
			}
		})
	}
}

func testCanonicalEmails(t *testing.T, s store.Store) {
	sam := newUser(t, s, "  Sam@Example.COM ")
	if sam, err := s.UserByID(ctx, sam.ID); err != nil || sam.Email != "sam@example.com" {
		t.Fatalf("stored %q, %v; want sam@example.com", sam.Email, err)
	}
	for _, typed := range []string{"sam@example.com", "SAM@EXAMPLE.COM", " sam@example.com"} {
		if got, err := s.UserByEmail(ctx, typed); err != nil || got.ID != sam.ID {
			t.Errorf("UserByEmail(%q) = %v, %v; want sam", typed, got.ID, err)
		}
	}
	// A long s (U+017F) folds to s and the Kelvin sign (U+212A) to k under Unicode case
	// folding; neither is the ASCII letter's mailbox.
	for _, other := range []string{"\u017fam@example.com", "\u212aam@example.com"} {
		if _, err := s.UserByEmail(ctx, other); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("UserByEmail(%q) found an account: %v", other, err)
		}
	}
	longS := newUser(t, s, "\u017fam@example.com") // another address, so another account
	if longS.ID == sam.ID {
		t.Fatal("one account")
	}
	wantErr(t, s.CreateUser(ctx, store.User{ID: store.NewID(), Email: "SAM@example.com", PasswordHash: "x", CreatedAt: t0}), store.ErrConflict)
}

func link(t testing.TB, s store.Store, u store.User, purpose store.LinkPurpose, email string, at time.Time) string {
	t.Helper()
	token, hash := store.NewSecret("")
	ttl := store.ResetLinkTTL
	if purpose == store.LinkEmail {
		ttl = store.EmailLinkTTL
	}
	must(t, s.CreateAccountLink(ctx, store.AccountLink{TokenHash: hash, UserID: u.ID, Purpose: purpose, Email: email, CreatedAt: at, ExpiresAt: at.Add(ttl)}))
	return token
}

func testResetLink(t *testing.T, s store.Store) {
	u := newUser(t, s, "u@example.com")
	first := link(t, s, u, store.LinkReset, "", t0)
	second := link(t, s, u, store.LinkReset, "", t0.Add(time.Minute))
	// The newer link replaced the older one.
	_, err := s.AccountLink(ctx, store.HashSecret(first), store.LinkReset, t0.Add(time.Minute))
	wantErr(t, err, store.ErrNotFound)
	l, err := s.AccountLink(ctx, store.HashSecret(second), store.LinkReset, t0.Add(time.Minute))
	must(t, err)
	if l.UserID != u.ID || !l.ExpiresAt.Equal(t0.Add(time.Minute+store.ResetLinkTTL)) {
		t.Fatalf("link %+v", l)
	}
	// A link of one purpose is not one of the other.
	_, err = s.AccountLink(ctx, store.HashSecret(second), store.LinkEmail, t0)
	wantErr(t, err, store.ErrNotFound)
	_, _, err = s.ConfirmEmail(ctx, store.HashSecret(second), t0)
	wantErr(t, err, store.ErrNotFound)
	// Expired at its expiry, to the microsecond.
	expiry := t0.Add(time.Minute + store.ResetLinkTTL)
	_, err = s.AccountLink(ctx, store.HashSecret(second), store.LinkReset, expiry)
	wantErr(t, err, store.ErrGone)
	_, err = s.ResetPassword(ctx, store.HashSecret(second), "new", expiry)
	wantErr(t, err, store.ErrGone)
	got, err := s.ResetPassword(ctx, store.HashSecret(second), "new", expiry.Add(-time.Microsecond))
	must(t, err)
	if got.ID != u.ID || got.PasswordHash != "new" {
		t.Fatalf("reset answered %+v", got)
	}
	_, err = s.ResetPassword(ctx, store.HashSecret(second), "again", expiry.Add(-time.Microsecond))
	wantErr(t, err, store.ErrGone)
	if got, _ := s.UserByID(ctx, u.ID); got.PasswordHash != "new" {
		t.Fatalf("password %q after a replayed link, want new", got.PasswordHash)
	}
	_, err = s.ResetPassword(ctx, store.HashSecret("never issued"), "x", t0)
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.CreateAccountLink(ctx, store.AccountLink{TokenHash: "h", UserID: store.NewID(), Purpose: store.LinkReset, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}), store.ErrNotFound)
}

func testResetLinkRace(t *testing.T, s store.Store) {
	u := newUser(t, s, "u@example.com")
	token := link(t, s, u, store.LinkReset, "", t0)
	var wg sync.WaitGroup
	var ok, gone atomic.Int32
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.ResetPassword(ctx, store.HashSecret(token), string(rune('a'+i)), t0)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, store.ErrGone):
				gone.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || gone.Load() != 19 {
		t.Fatalf("%d uses succeeded, %d were gone; want 1 and 19", ok.Load(), gone.Load())
	}
}

func session(t testing.TB, s store.Store, u store.User, at time.Time) string {
	t.Helper()
	_, hash := store.NewSecret("")
	must(t, s.CreateSession(ctx, store.Session{TokenHash: hash, UserID: u.ID, CSRF: "c", CreatedAt: at, ExpiresAt: at.Add(30 * 24 * time.Hour)}))
	return hash
}

func live(s store.Store, hash string) bool {
	_, err := s.SessionByHash(ctx, hash, t0)
	return err == nil
}

func testPasswordEndsSessions(t *testing.T, s store.Store) {
	u, other := newUser(t, s, "u@example.com"), newUser(t, s, "o@example.com")
	a, b, theirs := session(t, s, u, t0), session(t, s, u, t0), session(t, s, other, t0)
	email := link(t, s, u, store.LinkEmail, "new@example.com", t0)
	must(t, s.ChangePassword(ctx, u.ID, "changed", a, t0))
	if !live(s, a) || live(s, b) || !live(s, theirs) {
		t.Fatalf("after a change keeping a: a %v, b %v, another user's %v; want true, false, true", live(s, a), live(s, b), live(s, theirs))
	}
	// A pending e-mail change ends with it: whoever asked for it may not be the owner.
	_, _, err := s.ConfirmEmail(ctx, store.HashSecret(email), t0)
	wantErr(t, err, store.ErrNotFound)
	if got, _ := s.UserByID(ctx, u.ID); got.PasswordHash != "changed" {
		t.Fatalf("password %q", got.PasswordHash)
	}

	c := session(t, s, u, t0)
	reset := link(t, s, u, store.LinkReset, "", t0)
	_, err = s.ResetPassword(ctx, store.HashSecret(reset), "reset", t0)
	must(t, err)
	if live(s, a) || live(s, c) || !live(s, theirs) {
		t.Fatal("a reset left one of the account's sessions, or ended another account's")
	}
	wantErr(t, s.ChangePassword(ctx, store.NewID(), "x", "", t0), store.ErrNotFound)
}

func testConfirmEmail(t *testing.T, s store.Store) {
	u, taken := newUser(t, s, "u@example.com"), newUser(t, s, "taken@example.com")
	token := link(t, s, u, store.LinkEmail, "Taken@Example.com", t0)
	_, _, err := s.ConfirmEmail(ctx, store.HashSecret(token), t0)
	wantErr(t, err, store.ErrConflict)
	if got, _ := s.UserByID(ctx, u.ID); got.Email != "u@example.com" {
		t.Fatalf("e-mail %q after a refused change", got.Email)
	}
	// The link is still unused: the other account may change its address first.
	if _, err := s.AccountLink(ctx, store.HashSecret(token), store.LinkEmail, t0); err != nil {
		t.Fatalf("the refused link: %v", err)
	}
	must(t, s.DeleteSession(ctx, "none")) // harmless
	_, err = s.DeleteAccount(ctx, taken.ID)
	must(t, err)
	old, email, err := s.ConfirmEmail(ctx, store.HashSecret(token), t0.Add(time.Hour))
	must(t, err)
	if old.Email != "u@example.com" || email != "taken@example.com" {
		t.Fatalf("ConfirmEmail = %q -> %q, want u@ -> taken@", old.Email, email)
	}
	if got, err := s.UserByEmail(ctx, "taken@example.com"); err != nil || got.ID != u.ID {
		t.Fatalf("the new address finds %v, %v", got.ID, err)
	}
	if _, err := s.UserByEmail(ctx, "u@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the old address still finds the account: %v", err)
	}
	_, _, err = s.ConfirmEmail(ctx, store.HashSecret(token), t0.Add(time.Hour))
	wantErr(t, err, store.ErrGone)
	late := link(t, s, u, store.LinkEmail, "later@example.com", t0)
	_, _, err = s.ConfirmEmail(ctx, store.HashSecret(late), t0.Add(store.EmailLinkTTL))
	wantErr(t, err, store.ErrGone)
}

func testSessionsOf(t *testing.T, s store.Store) {
	u, other := newUser(t, s, "u@example.com"), newUser(t, s, "o@example.com")
	older, newer := session(t, s, u, t0.Add(-time.Hour)), session(t, s, u, t0)
	theirs := session(t, s, other, t0)
	must(t, s.TouchSession(ctx, older, t0.Add(time.Minute)))
	got, err := s.SessionsOf(ctx, u.ID, t0)
	must(t, err)
	if len(got) != 2 || got[0].TokenHash != older || got[1].TokenHash != newer || got[0].UserID != u.ID || !got[0].SeenAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("sessions %+v, want the recently seen first", got)
	}
	if got, _ := s.SessionsOf(ctx, u.ID, t0.Add(31*24*time.Hour)); len(got) != 0 {
		t.Fatalf("expired sessions listed: %+v", got)
	}
	n, err := s.EndSessions(ctx, u.ID, newer)
	must(t, err)
	if n != 1 || live(s, older) || !live(s, newer) || !live(s, theirs) {
		t.Fatalf("EndSessions ended %d; older %v newer %v theirs %v", n, live(s, older), live(s, newer), live(s, theirs))
	}
	if n, err := s.EndSessions(ctx, "not-a-uuid", ""); err != nil || n != 0 {
		t.Fatalf("EndSessions of a bad id = %d, %v", n, err)
	}
}

func testDeleteAccountInUse(t *testing.T, s store.Store) {
	ada, bob, cy := newUser(t, s, "ada@example.com"), newUser(t, s, "bob@example.com"), newUser(t, s, "cy@example.com")
	agency := team(t, s, ada, "Agency", map[store.User]store.Role{bob: store.RoleEditor})
	shared := team(t, s, ada, "Shared", map[store.User]store.Role{cy: store.RoleOwner})
	_, err := s.DeleteAccount(ctx, ada.ID)
	var inUse *store.AccountInUseError
	if !errors.As(err, &inUse) || !errors.Is(err, store.ErrConflict) || len(inUse.Workspaces) != 1 || inUse.Workspaces[0].ID != agency.ID || inUse.Workspaces[0].Name != "Agency" {
		t.Fatalf("DeleteAccount = %v, want the account in use by Agency only (Shared has another owner)", err)
	}
	// Someone in the personal workspace keeps it too: its data goes with the account.
	tok := store.NewID()
	must(t, s.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: tok, WorkspaceID: ada.ID, Email: cy.Email, Role: store.RoleOwner,
		InvitedBy: ada.ID, CreatedAt: t0, ExpiresAt: t0.Add(store.InvitationTTL)}))
	_, err = s.AcceptInvitation(ctx, tok, cy.ID, cy.Email, t0)
	must(t, err)
	_, err = s.DeleteAccount(ctx, ada.ID)
	if !errors.As(err, &inUse) || len(inUse.Workspaces) != 2 || inUse.Workspaces[0].ID != ada.ID || inUse.Workspaces[1].ID != agency.ID {
		t.Fatalf("DeleteAccount = %v, want the personal workspace then Agency", err)
	}
	if _, err := s.UserByID(ctx, ada.ID); err != nil {
		t.Fatalf("a refused deletion deleted the account: %v", err)
	}
	use, err := s.AccountUse(ctx, ada.ID)
	must(t, err)
	if len(use.Deleted) != 0 || len(use.InUse) != 2 || use.InUse[0].ID != ada.ID || use.InUse[1].ID != agency.ID || use.InUse[1].Role != store.RoleOwner {
		t.Fatalf("AccountUse = %+v, want the personal workspace and Agency in use, nothing to delete", use)
	}
	solo := team(t, s, bob, "Bob alone", nil)
	if use, _ := s.AccountUse(ctx, bob.ID); len(use.Deleted) != 2 || use.Deleted[0].ID != bob.ID || use.Deleted[1].ID != solo.ID || len(use.InUse) != 0 {
		t.Fatalf("bob's AccountUse = %+v, want his two workspaces deleted (he is an editor of Agency)", use)
	}
	if _, err := s.Workspace(ctx, cy.ID, shared.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.DeleteAccount(ctx, store.NewID())
	wantErr(t, err, store.ErrNotFound)
}

func testDeleteAccount(t *testing.T, s store.Store) {
	ada, bob := newUser(t, s, "ada@example.com"), newUser(t, s, "bob@example.com")
	solo := team(t, s, ada, "Solo", nil)
	agency := team(t, s, bob, "Agency", map[store.User]store.Role{ada: store.RoleEditor})
	home := newSite(t, s, ada, "home")
	soloSite := teamSite(t, s, ada, solo, "solo")
	made := teamSite(t, s, ada, agency, "made-by-ada")
	sc := completedScan(t, s, made, t0, 80)
	must(t, s.CreateReport(ctx, store.Report{ID: store.NewID(), TokenHash: "team-report", ScanID: sc.ID, UserID: ada.ID, WorkspaceID: agency.ID, Title: "r", CreatedAt: t0}))
	homeScan := completedScan(t, s, home, t0, 70)
	must(t, s.CreateReport(ctx, store.Report{ID: store.NewID(), TokenHash: "home-report", ScanID: homeScan.ID, UserID: ada.ID, Title: "r", CreatedAt: t0}))
	_, keyHash := store.NewSecret("svc_")
	must(t, s.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: ada.ID, Name: "ci", KeyHash: keyHash, Prefix: "svc_", CreatedAt: t0}))
	sess := session(t, s, ada, t0)
	reset := link(t, s, ada, store.LinkReset, "", t0)
	_, atHash := store.NewSecret("at_")
	must(t, s.CreateClient(ctx, store.OAuthClient{ID: "c_ada", Name: "app", RedirectURIs: []string{"https://app.test/cb"}, CreatedAt: t0}))
	must(t, s.CreateTokens(ctx, store.OAuthToken{TokenHash: atHash, Kind: store.TokenAccess, ClientID: "c_ada", UserID: ada.ID, FamilyID: store.NewID(), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}))
	must(t, s.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: "ada-invites", WorkspaceID: solo.ID, Email: "x@example.com", Role: store.RoleViewer,
		InvitedBy: ada.ID, CreatedAt: t0, ExpiresAt: t0.Add(store.InvitationTTL)}))

	deleted, err := s.DeleteAccount(ctx, ada.ID)
	must(t, err)
	if len(deleted) != 2 || deleted[0] != ada.ID || deleted[1] != solo.ID {
		t.Fatalf("deleted workspaces %v, want the personal one then Solo", deleted)
	}
	if _, err := s.UserByID(ctx, ada.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the account: %v", err)
	}
	if _, _, err := s.ScanForJob(ctx, homeScan.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the personal workspace's scan: %v", err)
	}
	if sites, err := s.SitesOf(ctx, bob.ID); err != nil || len(sites) != 1 || sites[0].ID != made.ID {
		t.Errorf("bob's sites %+v, %v; want only the one ada made in Agency (Solo's %s is gone)", sites, err, soloSite.ID)
	}
	if live(s, sess) {
		t.Error("the account's session still works")
	}
	if _, err := s.APIKeyByHash(ctx, keyHash, t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the account's key: %v", err)
	}
	if _, err := s.Token(ctx, atHash); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the account's OAuth token: %v", err)
	}
	if _, err := s.AccountLink(ctx, store.HashSecret(reset), store.LinkReset, t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the account's reset link: %v", err)
	}
	if _, err := s.ReportByHash(ctx, "home-report"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the personal workspace's report: %v", err)
	}
	// What it made in the team's workspace stays there, with the team's owner.
	got, err := s.Site(ctx, bob.ID, made.ID)
	must(t, err)
	if got.UserID != bob.ID {
		t.Errorf("the team site's user %q, want the owner %q", got.UserID, bob.ID)
	}
	rep, err := s.ReportByHash(ctx, "team-report")
	must(t, err)
	if _, _, results, err := s.ReportScan(ctx, rep); err != nil || len(results) != 1 {
		t.Fatalf("the team's report after its maker's account went: %d results, %v", len(results), err)
	}
	if ms, _ := s.Members(ctx, agency.ID); len(ms) != 1 || ms[0].UserID != bob.ID {
		t.Fatalf("Agency's members %+v, want bob alone", ms)
	}
	// The address is free again.
	again := newUser(t, s, "ADA@example.com")
	if ws, err := s.WorkspacesOf(ctx, again.ID); err != nil || len(ws) != 1 || ws[0].ID != again.ID {
		t.Fatalf("a new account on the same address: %+v, %v", ws, err)
	}
}

// The deletion locks the workspaces, then the user, the order in which a removal (whose sites
// pass to an owner) and an accept (whose membership names the user) reach them: racing both
// gives each an answer of the contract, never a deadlock or another error.
func testDeleteAccountRace(t *testing.T, s store.Store) {
	for i := range 10 {
		ada, ed := newUser(t, s, fmt.Sprintf("ada%d@example.com", i)), newUser(t, s, fmt.Sprintf("ed%d@example.com", i))
		w := team(t, s, ada, "Agency", map[store.User]store.Role{ed: store.RoleEditor})
		teamSite(t, s, ed, w, fmt.Sprintf("ed-site-%d", i))
		tok := store.NewID()
		must(t, s.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: tok, WorkspaceID: store.PersonalWorkspace(ed.ID), Email: ada.Email,
			Role: store.RoleViewer, InvitedBy: ed.ID, CreatedAt: t0, ExpiresAt: t0.Add(store.InvitationTTL)}))
		var wg sync.WaitGroup
		errs := make([]error, 3)
		wg.Add(3)
		go func() { defer wg.Done(); _, errs[0] = s.DeleteAccount(ctx, ada.ID) }()
		go func() { defer wg.Done(); errs[1] = s.RemoveMember(ctx, w.ID, ed.ID) }()
		go func() { defer wg.Done(); _, errs[2] = s.AcceptInvitation(ctx, tok, ada.ID, ada.Email, t0) }()
		wg.Wait()
		var inUse *store.AccountInUseError
		if err := errs[0]; err != nil && !errors.As(err, &inUse) {
			t.Fatalf("round %d: DeleteAccount: %v", i, err)
		}
		if err := errs[1]; err != nil {
			t.Fatalf("round %d: RemoveMember: %v", i, err)
		}
		if err := errs[2]; err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("round %d: AcceptInvitation: %v", i, err)
		}
	}
}

// testEndGrantsSince (issue 44, attack 3): a password reset and "sign out everywhere" end the
// grants made since the password was last set, and answer the apps ended. A family begun before
// stays, however recently it was rotated; a consent given since goes with all its client's
// tokens; a new family of an app consented before goes; another account's grants stay.
func testEndGrantsSince(t *testing.T, s store.Store) {
	u, other := newUser(t, s, "u@example.com"), newUser(t, s, "o@example.com")
	if got, _ := s.UserByID(ctx, u.ID); !got.PasswordChangedAt.Equal(got.CreatedAt) {
		t.Fatalf("a new account's PasswordChangedAt %v, want its CreatedAt %v", got.PasswordChangedAt, got.CreatedAt)
	}
	for _, c := range []struct{ id, name string }{{"c_own", "Own"}, {"c_evil", "Evil"}, {"c_again", "Again"}} {
		must(t, s.CreateClient(ctx, store.OAuthClient{ID: c.id, Name: c.name, RedirectURIs: []string{"https://x/cb"}, AuthMethod: "none", CreatedAt: t0}))
	}
	grant := func(user, client string, at time.Time) (family, hash string) {
		t.Helper()
		family = store.NewID()
		_, hash = store.NewSecret("rt_")
		must(t, s.CreateTokens(ctx, store.OAuthToken{TokenHash: hash, Kind: store.TokenRefresh, ClientID: client, UserID: user, FamilyID: family,
			Scope: store.ScopeRead, CreatedAt: at, ExpiresAt: at.Add(30 * 24 * time.Hour)}))
		return family, hash
	}
	revoked := func(hash string) bool {
		tok, err := s.Token(ctx, hash)
		must(t, err)
		return tok.RevokedAt != nil
	}
	// Before the password change: u's own app, and "Again", both consented, and another
	// account's grant of Evil.
	must(t, s.SaveConsent(ctx, store.Consent{UserID: u.ID, ClientID: "c_own", Scope: store.ScopeRead, CreatedAt: t0}))
	must(t, s.SaveConsent(ctx, store.Consent{UserID: u.ID, ClientID: "c_again", Scope: store.ScopeRead, CreatedAt: t0}))
	ownFamily, ownFirst := grant(u.ID, "c_own", t0)
	_, againOld := grant(u.ID, "c_again", t0)
	must(t, s.SaveConsent(ctx, store.Consent{UserID: other.ID, ClientID: "c_evil", Scope: store.ScopeRead, CreatedAt: t0.Add(3 * time.Hour)}))
	_, theirs := grant(other.ID, "c_evil", t0.Add(3*time.Hour))

	changed := t0.Add(time.Hour)
	must(t, s.ChangePassword(ctx, u.ID, "changed", "", changed))
	got, _ := s.UserByID(ctx, u.ID)
	if !got.PasswordChangedAt.Equal(changed) {
		t.Fatalf("PasswordChangedAt %v after a change at %v", got.PasswordChangedAt, changed)
	}
	// Since: u's own family rotated, Evil consented and granted, Again granted anew on its old
	// consent.
	_, ownRotated := store.NewSecret("rt_")
	must(t, s.RotateRefresh(ctx, ownFirst, t0.Add(2*time.Hour), store.OAuthToken{TokenHash: ownRotated, Kind: store.TokenRefresh, ClientID: "c_own",
		UserID: u.ID, FamilyID: ownFamily, Scope: store.ScopeRead, CreatedAt: t0.Add(2 * time.Hour), ExpiresAt: t0.Add(30 * 24 * time.Hour)}))
	must(t, s.SaveConsent(ctx, store.Consent{UserID: u.ID, ClientID: "c_evil", Scope: store.ScopeRead, CreatedAt: t0.Add(90 * time.Minute)}))
	_, evil := grant(u.ID, "c_evil", t0.Add(90*time.Minute))
	_, againNew := grant(u.ID, "c_again", t0.Add(100*time.Minute))

	ended, err := s.EndGrantsSince(ctx, u.ID, got.PasswordChangedAt, t0.Add(4*time.Hour))
	must(t, err)
	var names []string
	for _, c := range ended {
		names = append(names, c.ClientName)
	}
	if fmt.Sprint(names) != "[Again Evil]" && fmt.Sprint(names) != "[Evil Again]" {
		t.Errorf("ended %v, want Evil and Again", names)
	}
	for name, c := range map[string]struct {
		hash string
		want bool
	}{
		"own, rotated since": {ownRotated, false}, "evil": {evil, true}, "again's new family": {againNew, true},
		"again's old family": {againOld, false}, "another account's": {theirs, false},
	} {
		if revoked(c.hash) != c.want {
			t.Errorf("%s: revoked %v, want %v", name, !c.want, c.want)
		}
	}
	consents, err := s.Consents(ctx, u.ID)
	must(t, err)
	var left []string
	for _, c := range consents {
		left = append(left, c.ClientID)
	}
	if fmt.Sprint(left) != "[c_again c_own]" && fmt.Sprint(left) != "[c_own c_again]" {
		t.Errorf("consents left %v, want c_own and c_again", left)
	}
	if ended, err := s.EndGrantsSince(ctx, u.ID, got.PasswordChangedAt, t0.Add(5*time.Hour)); err != nil || len(ended) != 0 {
		t.Errorf("ending again: %v, %v; want nothing", ended, err)
	}
	if ended, err := s.EndGrantsSince(ctx, "not-a-uuid", t0, t0); err != nil || len(ended) != 0 {
		t.Errorf("an id that is no uuid: %v, %v", ended, err)
	}
}
