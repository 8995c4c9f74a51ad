package postgres_test

import (
	"context"
	"errors"
	"testing"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// A replica that found a user a member of a site's workspace asks only the site's version on
// the user's next reads (migration 058); a departure or a role change made by another replica
// moves that version in its own transaction, so the user's very next read there is refused
// (departure) or answered at the new version (role), and an unrelated member's settings move
// nothing.
func TestMembershipChangesMoveTheSiteVersion(t *testing.T) {
	a, dsn := storetest.PostgresDSN(t)
	b := storetest.Open(t, dsn) // another replica on the same database
	ctx := context.Background()
	owner := newUser(t, a, "owner@example.com")
	member := newUser(t, a, "member@example.com")
	site := newSite(t, a, owner, "members")
	ws := store.PersonalWorkspace(owner.ID)
	tok := store.NewID()
	must(t, a.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: tok, WorkspaceID: ws, Email: member.Email, Role: store.RoleEditor,
		InvitedBy: owner.ID, CreatedAt: t0, ExpiresAt: t0.Add(store.InvitationTTL)}))
	_, err := a.AcceptInvitation(ctx, tok, member.ID, member.Email, t0)
	must(t, err)

	read := func(who string) (int64, error) {
		t.Helper()
		in, err := a.BudgetInputs(ctx, who, site.ID)
		return in.Version, err
	}
	v0, err := read(member.ID) // loads, and finds the member
	must(t, err)
	if v, err := read(member.ID); err != nil || v != v0 { // the version alone
		t.Fatalf("second read = %d, %v; want %d", v, err, v0)
	}

	must(t, b.SetMemberNotify(ctx, ws, member.ID, false))
	if v, err := read(member.ID); err != nil || v != v0 {
		t.Errorf("after a notification setting: version %d, %v; want %d unmoved", v, err, v0)
	}

	must(t, b.SetRole(ctx, ws, member.ID, store.RoleViewer))
	v1, err := read(member.ID)
	if err != nil || v1 <= v0 {
		t.Errorf("after a role change on another replica: version %d, %v; want past %d", v1, err, v0)
	}
	if v, err := read(member.ID); err != nil || v != v1 {
		t.Errorf("the read after: %d, %v; want %d", v, err, v1)
	}
	if _, err := read(owner.ID); err != nil {
		t.Fatal(err)
	}

	must(t, b.RemoveMember(ctx, ws, member.ID))
	if _, err := read(member.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the departed member's next read on this replica = %v, want not found", err)
	}
	if _, err := read(owner.ID); err != nil {
		t.Errorf("the owner's read after the departure: %v", err)
	}
}
