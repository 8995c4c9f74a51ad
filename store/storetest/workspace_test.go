package storetest_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestWorkspaces runs the workspace contract (DESIGN §9) against every backend.
func TestWorkspaces(t *testing.T) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"every account starts with a personal workspace it owns", testPersonalWorkspace},
		{"a user owns at most max workspaces", testWorkspaceCap},
		{"members read a workspace's sites; strangers and removed members get not found", testMembershipScoping},
		{"viewers read but cannot change sites, budgets, rules, reports or keys", testViewerWrites},
		{"a workspace always keeps at least one owner", testLastOwner},
		{"an invitation is single use, bound to its e-mail, and gone once used, revoked or expired", testInvitations},
		{"20 parallel accepts of one link make one member", testConcurrentAccept},
		{"an API key reads only its workspace, and only while its maker is a member", testKeyWorkspace},
		{"the site cap counts a workspace's sites, whoever added them", testWorkspaceSiteCap},
		{"an owner deletes a workspace with its sites, keys, reports, invitations, members and connection; a personal one stays, and the security log keeps its lines", testDeleteWorkspace},
		{"a member's pending invitations end when they are removed or stop being owner", testInviterLeaves},
		{"the holder of a personal workspace cannot be removed from it, demoted or leave it", testPersonalHolder},
		{"an invitation is bound to its e-mail's canonical form: no Unicode case folding", testInvitationEmailForm},
	}
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, b.Open(t)) })
			}
		})
	}
}

// team makes a workspace owned by owner with the other users as members of the given roles.
func team(t *testing.T, s store.Store, owner store.User, name string, members map[store.User]store.Role) store.Workspace {
	t.Helper()
	w := store.Workspace{ID: store.NewID(), Name: name, CreatedAt: t0}
	must(t, s.CreateWorkspace(ctx, w, owner.ID, 10))
	for u, role := range members {
		tok := store.NewID()
		must(t, s.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: tok, WorkspaceID: w.ID, Email: u.Email,
			Role: role, InvitedBy: owner.ID, CreatedAt: t0, ExpiresAt: t0.Add(store.InvitationTTL)}))
		_, err := s.AcceptInvitation(ctx, tok, u.ID, u.Email, t0)
		must(t, err)
	}
	return w
}

func teamSite(t *testing.T, s store.Store, u store.User, w store.Workspace, name string) store.Site {
	t.Helper()
	site := store.Site{ID: store.NewID(), UserID: u.ID, WorkspaceID: w.ID, Name: name, Domain: name + ".test", Pages: []string{"/"}, CreatedAt: t0}
	must(t, s.CreateSite(ctx, site))
	return site
}

func testPersonalWorkspace(t *testing.T, s store.Store) {
	a := newUser(t, s, "Ada@example.com")
	ws, err := s.WorkspacesOf(ctx, a.ID)
	must(t, err)
	if len(ws) != 1 || ws[0].ID != store.PersonalWorkspace(a.ID) || ws[0].Role != store.RoleOwner || ws[0].Name != "ada's workspace" {
		t.Fatalf("workspaces %+v, want one personal workspace \"ada's workspace\" owned by the user", ws)
	}
	site := newSite(t, s, a, "alpha")
	got, err := s.Site(ctx, a.ID, site.ID)
	must(t, err)
	if got.WorkspaceID != a.ID {
		t.Fatalf("site's workspace %q, want the personal one %q", got.WorkspaceID, a.ID)
	}
}

func testWorkspaceCap(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	// The personal workspace counts: a cap of 2 leaves room for one more.
	must(t, s.CreateWorkspace(ctx, store.Workspace{ID: store.NewID(), Name: "Agency", CreatedAt: t0}, a.ID, 2))
	wantErr(t, s.CreateWorkspace(ctx, store.Workspace{ID: store.NewID(), Name: "Third", CreatedAt: t0}, a.ID, 2), store.ErrLimit)
	ws, err := s.WorkspacesOf(ctx, a.ID)
	must(t, err)
	if len(ws) != 2 || ws[0].ID != a.ID || ws[1].Name != "Agency" {
		t.Fatalf("workspaces %+v, want personal then Agency", ws)
	}
}

func testMembershipScoping(t *testing.T, s store.Store) {
	owner, viewer, stranger := newUser(t, s, "o@example.com"), newUser(t, s, "v@example.com"), newUser(t, s, "x@example.com")
	w := team(t, s, owner, "Agency", map[store.User]store.Role{viewer: store.RoleViewer})
	site := teamSite(t, s, owner, w, "shop")
	sc := completedScan(t, s, site, t0, 80)

	for _, u := range []store.User{owner, viewer} {
		if _, err := s.Site(ctx, u.ID, site.ID); err != nil {
			t.Fatalf("member %s: site: %v", u.Email, err)
		}
		if _, err := s.Scan(ctx, u.ID, sc.ID); err != nil {
			t.Fatalf("member %s: scan: %v", u.Email, err)
		}
		if _, err := s.PageErrors(ctx, u.ID, sc.ID); err != nil {
			t.Fatalf("member %s: page errors: %v", u.Email, err)
		}
		if _, err := s.PublishesOfScans(ctx, u.ID, []string{sc.ID}); err != nil {
			t.Fatalf("member %s: publishes of scans: %v", u.Email, err)
		}
		sites, err := s.SitesOf(ctx, u.ID)
		must(t, err)
		if len(sites) != 1 || sites[0].ID != site.ID || sites[0].WorkspaceID != w.ID {
			t.Fatalf("member %s: sites %+v, want the workspace's site", u.Email, sites)
		}
	}
	checkOut := func(u store.User) {
		t.Helper()
		_, err := s.Site(ctx, u.ID, site.ID)
		wantErr(t, err, store.ErrNotFound)
		_, err = s.Scan(ctx, u.ID, sc.ID)
		wantErr(t, err, store.ErrNotFound)
		_, err = s.PageResults(ctx, u.ID, sc.ID)
		wantErr(t, err, store.ErrNotFound)
		_, err = s.PageErrors(ctx, u.ID, sc.ID)
		wantErr(t, err, store.ErrNotFound)
		_, err = s.Workspace(ctx, u.ID, w.ID)
		wantErr(t, err, store.ErrNotFound)
		sites, err := s.SitesOf(ctx, u.ID)
		must(t, err)
		if len(sites) != 0 {
			t.Fatalf("%s sees %d sites, want none", u.Email, len(sites))
		}
	}
	checkOut(stranger)
	must(t, s.RemoveMember(ctx, w.ID, viewer.ID))
	checkOut(viewer) // the very next read
}

func testViewerWrites(t *testing.T, s store.Store) {
	owner, editor, viewer := newUser(t, s, "o@example.com"), newUser(t, s, "e@example.com"), newUser(t, s, "v@example.com")
	w := team(t, s, owner, "Agency", map[store.User]store.Role{editor: store.RoleEditor, viewer: store.RoleViewer})
	site := teamSite(t, s, editor, w, "shop")
	sc := completedScan(t, s, site, t0, 80)

	edited := site
	edited.UserID, edited.Name = viewer.ID, "renamed"
	wantErr(t, s.UpdateSite(ctx, edited), store.ErrNotFound)
	wantErr(t, s.SetBudgets(ctx, viewer.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 90}}), store.ErrNotFound)
	wantErr(t, s.AddAlertRule(ctx, viewer.ID, store.AlertRule{ID: store.NewID(), SiteID: site.ID, Metric: "lcp", Operator: "max", Threshold: 1}), store.ErrNotFound)
	wantErr(t, s.DeleteSite(ctx, viewer.ID, site.ID), store.ErrNotFound)
	wantErr(t, s.CreateSite(ctx, store.Site{ID: store.NewID(), UserID: viewer.ID, WorkspaceID: w.ID, Name: "x", Domain: "x.test", CreatedAt: t0}), store.ErrNotFound)
	wantErr(t, s.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: viewer.ID, WorkspaceID: w.ID, Name: "ci", KeyHash: store.NewID(), Prefix: "svc_", CreatedAt: t0}), store.ErrNotFound)
	got, err := s.Site(ctx, owner.ID, site.ID)
	must(t, err)
	if got.Name != "shop" {
		t.Fatalf("a viewer's update went through: name %q", got.Name)
	}
	b, err := s.Budgets(ctx, viewer.ID, site.ID)
	must(t, err)
	if len(b) != 0 {
		t.Fatalf("a viewer's budgets went through: %v", b)
	}

	// The editor may; the owner may too.
	edited.UserID = editor.ID
	must(t, s.UpdateSite(ctx, edited))
	must(t, s.SetBudgets(ctx, editor.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 90}}))
	rep := store.Report{ID: store.NewID(), TokenHash: store.NewID(), ScanID: sc.ID, UserID: editor.ID, Title: "r", CreatedAt: t0}
	must(t, s.CreateReport(ctx, rep))
	reps, err := s.ReportsOf(ctx, viewer.ID)
	must(t, err)
	if len(reps) != 1 || reps[0].WorkspaceID != w.ID {
		t.Fatalf("viewer's reports %+v, want the workspace's one", reps)
	}
	wantErr(t, s.RevokeReport(ctx, viewer.ID, rep.ID, t0), store.ErrNotFound)
	must(t, s.RevokeReport(ctx, owner.ID, rep.ID, t0))
	must(t, s.DeleteSite(ctx, owner.ID, site.ID))
}

func testLastOwner(t *testing.T, s store.Store) {
	owner, editor := newUser(t, s, "o@example.com"), newUser(t, s, "e@example.com")
	w := team(t, s, owner, "Agency", map[store.User]store.Role{editor: store.RoleEditor})
	wantErr(t, s.SetRole(ctx, w.ID, owner.ID, store.RoleEditor), store.ErrConflict)
	wantErr(t, s.RemoveMember(ctx, w.ID, owner.ID), store.ErrConflict)
	wantErr(t, s.SetRole(ctx, w.ID, store.NewID(), store.RoleEditor), store.ErrNotFound)
	if err := s.SetRole(ctx, w.ID, editor.ID, "admin"); err == nil {
		t.Fatal("an unknown role was stored")
	}
	must(t, s.SetRole(ctx, w.ID, editor.ID, store.RoleOwner))
	must(t, s.RemoveMember(ctx, w.ID, owner.ID)) // another owner remains: the first may leave
	wantErr(t, s.RemoveMember(ctx, w.ID, editor.ID), store.ErrConflict)
	ms, err := s.Members(ctx, w.ID)
	must(t, err)
	if len(ms) != 1 || ms[0].UserID != editor.ID || ms[0].Role != store.RoleOwner || ms[0].Email != editor.Email {
		t.Fatalf("members %+v, want the promoted editor as sole owner", ms)
	}
}

func testInvitations(t *testing.T, s store.Store) {
	owner, invitee, other := newUser(t, s, "o@example.com"), newUser(t, s, "Bea@example.com"), newUser(t, s, "c@example.com")
	w := team(t, s, owner, "Agency", nil)
	inv := store.Invitation{ID: store.NewID(), TokenHash: "hash-1", WorkspaceID: w.ID, Email: "bea@example.com", Role: store.RoleEditor,
		InvitedBy: owner.ID, CreatedAt: t0, ExpiresAt: t0.Add(store.InvitationTTL)}
	must(t, s.CreateInvitation(ctx, inv))
	got, err := s.InvitationByHash(ctx, "hash-1")
	must(t, err)
	if got.WorkspaceName != "Agency" || got.Role != store.RoleEditor || got.InviterEmail != owner.Email || !got.Usable(t0) {
		t.Fatalf("invitation %+v", got)
	}
	pending, err := s.Invitations(ctx, w.ID, t0)
	must(t, err)
	if len(pending) != 1 {
		t.Fatalf("%d pending, want 1", len(pending))
	}
	_, err = s.AcceptInvitation(ctx, "hash-1", other.ID, other.Email, t0)
	wantErr(t, err, store.ErrForbidden)
	_, err = s.AcceptInvitation(ctx, "unknown", invitee.ID, invitee.Email, t0)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.AcceptInvitation(ctx, "hash-1", invitee.ID, invitee.Email, t0.Add(time.Hour)) // e-mail compared case-insensitively
	must(t, err)
	if ws, err := s.Workspace(ctx, invitee.ID, w.ID); err != nil || ws.Role != store.RoleEditor {
		t.Fatalf("invitee's workspace %+v, %v; want editor", ws, err)
	}
	_, err = s.AcceptInvitation(ctx, "hash-1", invitee.ID, invitee.Email, t0.Add(time.Hour))
	wantErr(t, err, store.ErrGone)
	if pending, _ := s.Invitations(ctx, w.ID, t0); len(pending) != 0 {
		t.Fatalf("a used invitation is still pending")
	}

	// Revoked and expired links grant nothing.
	for _, c := range []struct {
		hash string
		at   time.Time
	}{{"hash-revoked", t0}, {"hash-expired", t0.Add(store.InvitationTTL)}} {
		id := store.NewID()
		must(t, s.CreateInvitation(ctx, store.Invitation{ID: id, TokenHash: c.hash, WorkspaceID: w.ID, Email: other.Email, Role: store.RoleViewer,
			InvitedBy: owner.ID, CreatedAt: t0, ExpiresAt: t0.Add(store.InvitationTTL)}))
		if c.hash == "hash-revoked" {
			must(t, s.RevokeInvitation(ctx, w.ID, id, t0))
			wantErr(t, s.RevokeInvitation(ctx, w.ID, id, t0), store.ErrNotFound)
		}
		_, err := s.AcceptInvitation(ctx, c.hash, other.ID, other.Email, c.at)
		wantErr(t, err, store.ErrGone)
	}
	if _, err := s.Workspace(ctx, other.ID, w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a revoked or expired link made a member: %v", err)
	}
}

func testConcurrentAccept(t *testing.T, s store.Store) {
	owner, invitee := newUser(t, s, "o@example.com"), newUser(t, s, "b@example.com")
	w := team(t, s, owner, "Agency", nil)
	must(t, s.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: "once", WorkspaceID: w.ID, Email: invitee.Email,
		Role: store.RoleViewer, InvitedBy: owner.ID, CreatedAt: t0, ExpiresAt: t0.Add(store.InvitationTTL)}))
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.AcceptInvitation(ctx, "once", invitee.ID, invitee.Email, t0)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	ok, gone := 0, 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, store.ErrGone):
			gone++
		default:
			t.Fatalf("accept: %v", err)
		}
	}
	if ok != 1 || gone != 19 {
		t.Fatalf("%d accepted, %d gone; want 1 and 19", ok, gone)
	}
	ms, err := s.Members(ctx, w.ID)
	must(t, err)
	if len(ms) != 2 {
		t.Fatalf("%d members, want the owner and one new member", len(ms))
	}
}

func testKeyWorkspace(t *testing.T, s store.Store) {
	owner, editor := newUser(t, s, "o@example.com"), newUser(t, s, "e@example.com")
	w := team(t, s, owner, "Agency", map[store.User]store.Role{editor: store.RoleEditor})
	teamSiteA := teamSite(t, s, owner, w, "shop")
	personal := newSite(t, s, editor, "mine")
	key := store.APIKey{ID: store.NewID(), UserID: editor.ID, WorkspaceID: w.ID, Name: "ci", KeyHash: "key-hash", Prefix: "svc_", CreatedAt: t0}
	must(t, s.CreateAPIKey(ctx, key))
	keys, err := s.APIKeys(ctx, editor.ID)
	must(t, err)
	if len(keys) != 1 || keys[0].WorkspaceID != w.ID || keys[0].WorkspaceName != "Agency" {
		t.Fatalf("keys %+v, want one of Agency", keys)
	}
	if _, err := s.BudgetInputsByKey(ctx, "key-hash", teamSiteA.ID, t0); err != nil {
		t.Fatalf("key reads its workspace's site: %v", err)
	}
	in, err := s.BudgetInputsByKey(ctx, "key-hash", personal.ID, t0)
	wantErr(t, err, store.ErrNotFound)
	if in.UserID == "" {
		t.Fatal("a known key reading another workspace's site must say whose key it is")
	}
	got, err := s.APIKeyByHash(ctx, "key-hash", t0)
	must(t, err)
	if got.WorkspaceID != w.ID {
		t.Fatalf("key's workspace %q, want %q", got.WorkspaceID, w.ID)
	}
	must(t, s.RemoveMember(ctx, w.ID, editor.ID))
	_, err = s.APIKeyByHash(ctx, "key-hash", t0)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.BudgetInputsByKey(ctx, "key-hash", teamSiteA.ID, t0)
	wantErr(t, err, store.ErrNotFound)
}

func testWorkspaceSiteCap(t *testing.T, s store.Store) {
	owner, editor := newUser(t, s, "o@example.com"), newUser(t, s, "e@example.com")
	w := team(t, s, owner, "Agency", map[store.User]store.Role{editor: store.RoleEditor})
	must(t, s.CreateSiteWithin(ctx, store.Site{ID: store.NewID(), UserID: owner.ID, WorkspaceID: w.ID, Name: "a", Domain: "a.test", CreatedAt: t0}, 2))
	must(t, s.CreateSiteWithin(ctx, store.Site{ID: store.NewID(), UserID: editor.ID, WorkspaceID: w.ID, Name: "b", Domain: "b.test", CreatedAt: t0}, 2))
	wantErr(t, s.CreateSiteWithin(ctx, store.Site{ID: store.NewID(), UserID: editor.ID, WorkspaceID: w.ID, Name: "c", Domain: "c.test", CreatedAt: t0}, 2), store.ErrLimit)
	// The editor's personal workspace has its own cap.
	must(t, s.CreateSiteWithin(ctx, store.Site{ID: store.NewID(), UserID: editor.ID, Name: "d", Domain: "d.test", CreatedAt: t0}, 2))
}

// A client report is its workspace's: it still opens after its maker leaves the workspace.
func TestReportOutlivesItsMaker(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			s := b.Open(t)
			owner, editor := newUser(t, s, "o@example.com"), newUser(t, s, "e@example.com")
			w := team(t, s, owner, "Agency", map[store.User]store.Role{editor: store.RoleEditor})
			site := teamSite(t, s, owner, w, "shop")
			sc := completedScan(t, s, site, t0, 80)
			rep := store.Report{ID: store.NewID(), TokenHash: "rep-hash", ScanID: sc.ID, UserID: editor.ID, Title: "r", CreatedAt: t0}
			must(t, s.CreateReport(ctx, rep))
			must(t, s.RemoveMember(ctx, w.ID, editor.ID))
			got, err := s.ReportByHash(ctx, "rep-hash")
			must(t, err)
			if _, _, results, err := s.ReportScan(ctx, got); err != nil || len(results) != 1 {
				t.Fatalf("the report after its maker left: %d results, %v", len(results), err)
			}
		})
	}
}

// A site outlives its adder's membership: it passes to an owner, so the scanner, which reads a
// site's scans as its user, still can.
func TestSitePassesToAnOwner(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			s := b.Open(t)
			owner, editor := newUser(t, s, "o@example.com"), newUser(t, s, "e@example.com")
			w := team(t, s, owner, "Agency", map[store.User]store.Role{editor: store.RoleEditor})
			site := teamSite(t, s, editor, w, "shop")
			must(t, s.RemoveMember(ctx, w.ID, editor.ID))
			got, err := s.Site(ctx, owner.ID, site.ID)
			must(t, err)
			if got.UserID != owner.ID {
				t.Fatalf("site's user %q after its adder left, want the owner %q", got.UserID, owner.ID)
			}
			sc := completedScan(t, s, got, t0, 80)
			if _, err := s.PageResults(ctx, got.UserID, sc.ID); err != nil {
				t.Fatalf("reading the site's scan as its user: %v", err)
			}
		})
	}
}

// An owner deletes a workspace with everything it holds; a personal workspace stays, and only
// an owner may delete.
func testDeleteWorkspace(t *testing.T, s store.Store) {
	owner, editor, viewer, stranger := newUser(t, s, "o@example.com"), newUser(t, s, "e@example.com"),
		newUser(t, s, "v@example.com"), newUser(t, s, "s@example.com")
	w := team(t, s, owner, "Agency", map[store.User]store.Role{editor: store.RoleEditor, viewer: store.RoleViewer})
	site := teamSite(t, s, editor, w, "shop")
	sc := completedScan(t, s, site, t0, 80)
	must(t, s.CreateReport(ctx, store.Report{ID: store.NewID(), TokenHash: "rep-hash", ScanID: sc.ID, UserID: owner.ID, Title: "r", CreatedAt: t0}))
	must(t, s.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: editor.ID, WorkspaceID: w.ID, Name: "ci", KeyHash: "key-hash", Prefix: "svc_", CreatedAt: t0}))
	must(t, s.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: "inv-hash", WorkspaceID: w.ID, Email: "x@example.com",
		Role: store.RoleViewer, InvitedBy: owner.ID, CreatedAt: t0, ExpiresAt: t0.Add(store.InvitationTTL)}))
	appendLog(t, s, store.LogEvent{WorkspaceID: w.ID, ActorID: owner.ID, ActorEmail: owner.Email, Kind: store.LogInvitationCreated, Target: "x@example.com", At: t0})
	must(t, s.SavePlatformConnection(ctx, store.PlatformConnection{WorkspaceID: w.ID, TokenSealed: "k1.sealed-1", CreatedAt: t0}))
	mine := newSite(t, s, owner, "mine")
	running := enqueue(t, s, site, t0)
	job, err := s.ClaimJob(ctx, store.KindScan, "worker", t0, 0)
	must(t, err)
	if job.ScanID != running.ID {
		t.Fatalf("claimed %s, want the workspace's scan", job.ScanID)
	}

	wantErr(t, s.DeleteWorkspace(ctx, stranger.ID, w.ID), store.ErrNotFound)
	wantErr(t, s.DeleteWorkspace(ctx, editor.ID, w.ID), store.ErrForbidden)
	wantErr(t, s.DeleteWorkspace(ctx, viewer.ID, w.ID), store.ErrForbidden)
	wantErr(t, s.DeleteWorkspace(ctx, owner.ID, store.PersonalWorkspace(owner.ID)), store.ErrConflict)
	// Made an owner of someone else's personal workspace, still not deletable: it is their home.
	home := store.Workspace{ID: store.PersonalWorkspace(editor.ID)}
	tok := store.NewID()
	must(t, s.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: tok, WorkspaceID: home.ID, Email: owner.Email,
		Role: store.RoleOwner, InvitedBy: editor.ID, CreatedAt: t0, ExpiresAt: t0.Add(store.InvitationTTL)}))
	_, err = s.AcceptInvitation(ctx, tok, owner.ID, owner.Email, t0)
	must(t, err)
	wantErr(t, s.DeleteWorkspace(ctx, owner.ID, home.ID), store.ErrConflict)
	if _, err := s.Site(ctx, editor.ID, site.ID); err != nil {
		t.Fatalf("refused deletions changed nothing, yet the site is %v", err)
	}
	must(t, s.Heartbeat(ctx, job.Lease(), t0))

	must(t, s.DeleteWorkspace(ctx, owner.ID, w.ID))
	for _, u := range []store.User{owner, editor, viewer} {
		_, err := s.Workspace(ctx, u.ID, w.ID)
		wantErr(t, err, store.ErrNotFound)
	}
	_, err = s.Site(ctx, owner.ID, site.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.Scan(ctx, owner.ID, sc.ID)
	wantErr(t, err, store.ErrNotFound)
	// The running scan stops as when its site is deleted: its worker's lease is lost.
	wantErr(t, s.Heartbeat(ctx, job.Lease(), t0.Add(time.Second)), store.ErrLeaseLost)
	_, _, err = s.ScanForJob(ctx, running.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.ReportByHash(ctx, "rep-hash")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.APIKeyByHash(ctx, "key-hash", t0)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.InvitationByHash(ctx, "inv-hash")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.PlatformConnection(ctx, w.ID)
	wantErr(t, err, store.ErrNotFound)
	// Append-only: the log outlives the workspace until its retention (no member reads it).
	if lines, err := s.LogOf(ctx, store.LogFilter{WorkspaceID: w.ID}); err != nil || len(lines) != 1 {
		t.Fatalf("a deleted workspace's security log: %+v, %v; want its line kept", lines, err)
	}
	if ms, err := s.Members(ctx, w.ID); err != nil || len(ms) != 0 {
		t.Fatalf("a deleted workspace's members: %+v, %v; want none", ms, err)
	}
	if _, err := s.Site(ctx, owner.ID, mine.ID); err != nil {
		t.Fatalf("the owner's personal site after deleting another workspace: %v", err)
	}
	wantErr(t, s.DeleteWorkspace(ctx, owner.ID, w.ID), store.ErrNotFound)
}

// A removed co-owner's pending owner invitation grants nothing (issue 34: its invitee could
// otherwise take the workspace from its last owner), nor a demoted owner's; an accept checks
// that the inviter is still an owner, so the order of the removal and the accept does not matter.
func testInviterLeaves(t *testing.T, s store.Store) {
	owner, co, mallory, other := newUser(t, s, "o@example.com"), newUser(t, s, "co@example.com"), newUser(t, s, "m@example.com"), newUser(t, s, "x@example.com")
	w := team(t, s, owner, "Agency", map[store.User]store.Role{co: store.RoleOwner})
	invite := func(hash string, by store.User, to store.User, role store.Role) {
		t.Helper()
		must(t, s.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: hash, WorkspaceID: w.ID, Email: to.Email, Role: role,
			InvitedBy: by.ID, CreatedAt: t0, ExpiresAt: t0.Add(store.InvitationTTL)}))
	}
	invite("by-co", co, mallory, store.RoleOwner)
	invite("by-owner", owner, other, store.RoleViewer)
	must(t, s.RemoveMember(ctx, w.ID, co.ID))
	pending, err := s.Invitations(ctx, w.ID, t0)
	must(t, err)
	if len(pending) != 1 || pending[0].TokenHash != "by-owner" {
		t.Fatalf("pending after the co-owner's removal: %+v, want only the owner's", pending)
	}
	_, err = s.AcceptInvitation(ctx, "by-co", mallory.ID, mallory.Email, t0)
	wantErr(t, err, store.ErrGone)
	if _, err := s.Workspace(ctx, mallory.ID, w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the removed co-owner's invitee is a member: %v", err)
	}
	wantErr(t, s.RemoveMember(ctx, w.ID, owner.ID), store.ErrConflict) // still the last owner

	// A demoted owner's invitations end too, and an invitation whose inviter stopped being an
	// owner by any path (here, one written after the demotion) grants nothing.
	co2 := newUser(t, s, "co2@example.com")
	tok := store.NewID()
	must(t, s.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: tok, WorkspaceID: w.ID, Email: co2.Email, Role: store.RoleOwner,
		InvitedBy: owner.ID, CreatedAt: t0, ExpiresAt: t0.Add(store.InvitationTTL)}))
	_, err = s.AcceptInvitation(ctx, tok, co2.ID, co2.Email, t0)
	must(t, err)
	invite("by-co2", co2, mallory, store.RoleOwner)
	must(t, s.SetRole(ctx, w.ID, co2.ID, store.RoleEditor))
	_, err = s.AcceptInvitation(ctx, "by-co2", mallory.ID, mallory.Email, t0)
	wantErr(t, err, store.ErrGone)
	invite("after-demotion", co2, mallory, store.RoleViewer)
	_, err = s.AcceptInvitation(ctx, "after-demotion", mallory.ID, mallory.Email, t0)
	wantErr(t, err, store.ErrGone)
	// Promoting keeps what an owner sends.
	must(t, s.SetRole(ctx, w.ID, co2.ID, store.RoleOwner))
	invite("by-owner-again", co2, mallory, store.RoleViewer)
	_, err = s.AcceptInvitation(ctx, "by-owner-again", mallory.ID, mallory.Email, t0)
	must(t, err)
}

// The holder of a personal workspace (its id is theirs) stays its owner: a co-owner cannot
// remove or demote them, and they cannot leave it (issue 34: they lost their sites and keys).
func testPersonalHolder(t *testing.T, s store.Store) {
	ada, co := newUser(t, s, "ada@example.com"), newUser(t, s, "co@example.com")
	home := store.PersonalWorkspace(ada.ID)
	tok := store.NewID()
	must(t, s.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: tok, WorkspaceID: home, Email: co.Email, Role: store.RoleOwner,
		InvitedBy: ada.ID, CreatedAt: t0, ExpiresAt: t0.Add(store.InvitationTTL)}))
	_, err := s.AcceptInvitation(ctx, tok, co.ID, co.Email, t0)
	must(t, err)
	site := newSite(t, s, ada, "home")
	wantErr(t, s.RemoveMember(ctx, home, ada.ID), store.ErrConflict)
	wantErr(t, s.SetRole(ctx, home, ada.ID, store.RoleEditor), store.ErrConflict)
	wantErr(t, s.SetRole(ctx, home, ada.ID, store.RoleViewer), store.ErrConflict)
	must(t, s.SetRole(ctx, home, ada.ID, store.RoleOwner)) // no change
	if w, err := s.Workspace(ctx, ada.ID, home); err != nil || w.Role != store.RoleOwner {
		t.Fatalf("the holder's home: %+v, %v; want owner", w, err)
	}
	if _, err := s.Site(ctx, ada.ID, site.ID); err != nil {
		t.Fatalf("the holder's site: %v", err)
	}
	// The co-owner may still leave, and the holder may remove them.
	must(t, s.RemoveMember(ctx, home, co.ID))
}

// An invitation for sam@ is not accepted by ſam@ (a long s, U+017F, which Unicode case folding
// maps to s), nor a Kelvin sign's address by k's; upper-case ASCII is the same address.
func testInvitationEmailForm(t *testing.T, s store.Store) {
	owner := newUser(t, s, "o@example.com")
	longS, kelvin, sam := newUser(t, s, "\u017fam@example.com"), newUser(t, s, "\u212aim@example.com"), newUser(t, s, "SAM@example.com")
	w := team(t, s, owner, "Agency", nil)
	for i, c := range []struct {
		invited string
		by      store.User
		want    error
	}{
		{"sam@example.com", longS, store.ErrForbidden},
		{"kim@example.com", kelvin, store.ErrForbidden},
		{"Sam@Example.com", sam, nil},
	} {
		hash := fmt.Sprint("form-", i)
		must(t, s.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: hash, WorkspaceID: w.ID, Email: c.invited, Role: store.RoleViewer,
			InvitedBy: owner.ID, CreatedAt: t0, ExpiresAt: t0.Add(store.InvitationTTL)}))
		_, err := s.AcceptInvitation(ctx, hash, c.by.ID, c.by.Email, t0)
		if c.want == nil {
			must(t, err)
			continue
		}
		wantErr(t, err, c.want)
		if _, err := s.Workspace(ctx, c.by.ID, w.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%q joined through an invitation for %q", c.by.Email, c.invited)
		}
	}
}
