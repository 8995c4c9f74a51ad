package memory

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"sitepulse/store"
)

// memberKey is a membership's key: workspace id, user id.
type memberKey [2]string

// role is userID's role in workspaceID, "" for a non-member; the caller holds m.mu.
func (m *Store) role(userID, workspaceID string) store.Role {
	return m.members[memberKey{workspaceID, userID}].Role
}

// canRead answers whether userID is a member of workspaceID: the scope of every read a user
// causes, as Postgres's readable; the caller holds m.mu.
func (m *Store) canRead(userID, workspaceID string) bool { return m.role(userID, workspaceID) != "" }

// canEdit answers whether userID is an owner or editor of workspaceID, as Postgres's writable.
func (m *Store) canEdit(userID, workspaceID string) bool {
	return m.role(userID, workspaceID).Can(store.ActEdit)
}

// addPersonalWorkspace makes u's personal workspace; the caller holds m.mu.
func (m *Store) addPersonalWorkspace(u store.User) {
	id := store.PersonalWorkspace(u.ID)
	m.workspaces[id] = store.Workspace{ID: id, Name: store.PersonalWorkspaceName(u.Email), CreatedAt: u.CreatedAt, RetentionDays: 400}
	m.members[memberKey{id, u.ID}] = store.Member{WorkspaceID: id, UserID: u.ID, Role: store.RoleOwner, CreatedAt: u.CreatedAt, NotifyRegressions: u.NotifyRegressions}
}

func (m *Store) CreateWorkspace(ctx context.Context, w store.Workspace, ownerID string, max int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[ownerID]; !ok {
		return store.NotFound("user")
	}
	n := 0
	for _, mb := range m.members {
		if mb.UserID == ownerID && mb.Role == store.RoleOwner {
			n++
		}
	}
	if n >= max {
		return fmt.Errorf("%d workspaces: %w", n, store.ErrLimit)
	}
	if _, ok := m.workspaces[w.ID]; ok {
		return fmt.Errorf("workspace %s: %w", w.ID, store.ErrConflict)
	}
	w.CreatedAt, w.RetentionDays, w.Role = store.Now(w.CreatedAt), 400, ""
	m.workspaces[w.ID] = w
	m.creators[w.ID] = ownerID
	m.members[memberKey{w.ID, ownerID}] = store.Member{WorkspaceID: w.ID, UserID: ownerID, Role: store.RoleOwner, CreatedAt: w.CreatedAt, NotifyRegressions: true}
	return nil
}

func (m *Store) WorkspacesOf(ctx context.Context, userID string) ([]store.Workspace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.Workspace{}
	for k, mb := range m.members {
		if k[1] == userID {
			w := m.workspaces[k[0]]
			w.Role = mb.Role
			out = append(out, w)
		}
	}
	sortWorkspaces(out, userID)
	return out, nil
}

// sortWorkspaces puts a user's workspaces in Postgres's order: personal first, then by name.
func sortWorkspaces(ws []store.Workspace, userID string) {
	sort.Slice(ws, func(i, j int) bool {
		a, b := ws[i], ws[j]
		if (a.ID == userID) != (b.ID == userID) {
			return a.ID == userID
		}
		if strings.ToLower(a.Name) != strings.ToLower(b.Name) {
			return strings.ToLower(a.Name) < strings.ToLower(b.Name)
		}
		return a.ID < b.ID
	})
}

func (m *Store) Workspace(ctx context.Context, userID, workspaceID string) (store.Workspace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.role(userID, workspaceID)
	if r == "" {
		return store.Workspace{}, store.NotFound("workspace")
	}
	w := m.workspaces[workspaceID]
	w.Role = r
	return w, nil
}

func (m *Store) Members(ctx context.Context, workspaceID string) ([]store.Member, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.Member{}
	for k, mb := range m.members {
		if k[0] == workspaceID {
			mb.Email = m.users[mb.UserID].Email
			out = append(out, mb)
		}
	}
	sort.Slice(out, func(i, j int) bool { return strings.ToLower(out[i].Email) < strings.ToLower(out[j].Email) })
	return out, nil
}

// lastOwner answers ErrConflict when workspaceID has no owner but userID; the caller holds m.mu.
func (m *Store) lastOwner(workspaceID, userID string) error {
	for k, mb := range m.members {
		if k[0] == workspaceID && k[1] != userID && mb.Role == store.RoleOwner {
			return nil
		}
	}
	return fmt.Errorf("a workspace keeps at least one owner: %w", store.ErrConflict)
}

func (m *Store) SetRole(ctx context.Context, workspaceID, userID string, role store.Role) error {
	if _, err := store.ParseRole(string(role)); err != nil {
		return err
	}
	if role != store.RoleOwner {
		if err := personalHolder(workspaceID, userID); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mb, ok := m.members[memberKey{workspaceID, userID}]
	if !ok {
		return store.NotFound("member")
	}
	if role != store.RoleOwner {
		if err := m.lastOwner(workspaceID, userID); err != nil {
			return err
		}
		m.revokeInvitationsBy(workspaceID, userID)
	}
	mb.Role = role
	m.members[memberKey{workspaceID, userID}] = mb
	return nil
}

// personalHolder refuses to take the holder of a personal workspace out of it or make them
// less than owner, as Postgres does.
func personalHolder(workspaceID, userID string) error {
	if workspaceID == store.PersonalWorkspace(userID) {
		return fmt.Errorf("the holder of a personal workspace stays its owner: %w", store.ErrConflict)
	}
	return nil
}

// revokeInvitationsBy revokes the pending invitations userID made in the workspace; the caller
// holds m.mu.
func (m *Store) revokeInvitationsBy(workspaceID, userID string) {
	for id, inv := range m.invitations {
		if inv.WorkspaceID == workspaceID && inv.InvitedBy == userID && inv.UsedAt == nil && inv.RevokedAt == nil {
			inv.RevokedAt = tp(time.Now())
			m.invitations[id] = inv
		}
	}
}

func (m *Store) RemoveMember(ctx context.Context, workspaceID, userID string) error {
	if err := personalHolder(workspaceID, userID); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.members[memberKey{workspaceID, userID}]; !ok {
		return store.NotFound("member")
	}
	if err := m.lastOwner(workspaceID, userID); err != nil {
		return err
	}
	delete(m.members, memberKey{workspaceID, userID})
	m.revokeInvitationsBy(workspaceID, userID)
	m.handOver(workspaceID, userID)
	return nil
}

// oldestOwner is a workspace's oldest owner, its owning account ("" for none); the caller holds
// m.mu.
func (m *Store) oldestOwner(workspaceID string) string {
	var heir store.Member
	for _, mb := range m.members {
		if mb.WorkspaceID == workspaceID && mb.Role == store.RoleOwner &&
			(heir.UserID == "" || mb.CreatedAt.Before(heir.CreatedAt) || mb.CreatedAt.Equal(heir.CreatedAt) && mb.UserID < heir.UserID) {
			heir = mb
		}
	}
	return heir.UserID
}

// handOver gives what userID made in a workspace (sites; reports too, when the account goes)
// to its oldest owner, as Postgres does; the caller holds m.mu and has ended the membership.
func (m *Store) handOver(workspaceID, userID string) {
	// The sites they added pass to an owner, as Postgres does (the oldest owner).
	heir := m.oldestOwner(workspaceID)
	for id, s := range m.sites {
		if s.WorkspaceID == workspaceID && s.UserID == userID {
			s.UserID = heir
			m.sites[id] = s
		}
	}
	for id, r := range m.reports {
		if r.WorkspaceID == workspaceID && r.UserID == userID {
			r.UserID = heir
			m.reports[id] = r
		}
	}
}

func (m *Store) DeleteWorkspace(ctx context.Context, userID, workspaceID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	mb, ok := m.members[memberKey{workspaceID, userID}]
	if !ok {
		return store.NotFound("workspace")
	}
	if mb.Role != store.RoleOwner {
		return store.ErrForbidden
	}
	if _, personal := m.users[workspaceID]; personal {
		return fmt.Errorf("a personal workspace is its account's home: %w", store.ErrConflict)
	}
	m.dropWorkspace(workspaceID)
	return nil
}

// dropWorkspace deletes a workspace with everything it holds, as Postgres's ON DELETE CASCADE
// does; the caller holds m.mu.
func (m *Store) dropWorkspace(workspaceID string) {
	for id, s := range m.sites {
		if s.WorkspaceID == workspaceID {
			m.dropSite(id)
		}
	}
	for id, k := range m.apiKeys {
		if k.WorkspaceID == workspaceID {
			delete(m.apiKeys, id)
			delete(m.revoked, id)
		}
	}
	for id, r := range m.reports {
		if r.WorkspaceID == workspaceID {
			delete(m.reports, id)
		}
	}
	for id, inv := range m.invitations {
		if inv.WorkspaceID == workspaceID {
			delete(m.invitations, id)
		}
	}
	for k := range m.members {
		if k[0] == workspaceID {
			delete(m.members, k)
		}
	}
	for id, c := range m.channels {
		if c.WorkspaceID == workspaceID {
			m.dropChannel(id)
		}
	}
	delete(m.connections, workspaceID)
	delete(m.audits, workspaceID)
	delete(m.creators, workspaceID)
	delete(m.workspaces, workspaceID)
}

func (m *Store) SetMemberNotify(ctx context.Context, workspaceID, userID string, on bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	mb, ok := m.members[memberKey{workspaceID, userID}]
	if !ok {
		return store.NotFound("member")
	}
	mb.NotifyRegressions = on
	m.members[memberKey{workspaceID, userID}] = mb
	return nil
}

func (m *Store) CreateInvitation(ctx context.Context, inv store.Invitation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.workspaces[inv.WorkspaceID]; !ok {
		return store.NotFound("workspace")
	}
	if _, ok := m.users[inv.InvitedBy]; !ok {
		return store.NotFound("user")
	}
	for _, o := range m.invitations {
		if o.TokenHash == inv.TokenHash || o.ID == inv.ID {
			return fmt.Errorf("invitation: %w", store.ErrConflict)
		}
	}
	inv.Email = store.CanonicalEmail(inv.Email)
	inv.CreatedAt, inv.ExpiresAt, inv.UsedAt, inv.RevokedAt = store.Now(inv.CreatedAt), store.Now(inv.ExpiresAt), nil, nil
	inv.WorkspaceName, inv.InviterEmail = "", ""
	m.invitations[inv.ID] = inv
	return nil
}

// filled is a stored invitation with what reads add; the caller holds m.mu.
func (m *Store) filled(inv store.Invitation) store.Invitation {
	inv.WorkspaceName = m.workspaces[inv.WorkspaceID].Name
	inv.InviterEmail = m.users[inv.InvitedBy].Email
	inv.UsedAt, inv.RevokedAt = cloneTime(inv.UsedAt), cloneTime(inv.RevokedAt)
	return inv
}

func (m *Store) Invitations(ctx context.Context, workspaceID string, now time.Time) ([]store.Invitation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.Invitation{}
	for _, inv := range m.invitations {
		if inv.WorkspaceID == workspaceID && inv.Usable(store.Now(now)) {
			out = append(out, m.filled(inv))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func (m *Store) InvitationByHash(ctx context.Context, tokenHash string) (store.Invitation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, inv := range m.invitations {
		if inv.TokenHash == tokenHash {
			return m.filled(inv), nil
		}
	}
	return store.Invitation{}, store.NotFound("invitation")
}

// roleRank orders roles for an accept by a member: the higher stays.
var roleRank = map[store.Role]int{store.RoleViewer: 1, store.RoleEditor: 2, store.RoleOwner: 3}

func (m *Store) AcceptInvitation(ctx context.Context, tokenHash, userID, email string, now time.Time) (store.Invitation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[userID]; !ok {
		return store.Invitation{}, store.NotFound("user")
	}
	for id, inv := range m.invitations {
		if inv.TokenHash != tokenHash {
			continue
		}
		if inv.Email != store.CanonicalEmail(email) {
			return store.Invitation{}, fmt.Errorf("invitation for another address: %w", store.ErrForbidden)
		}
		// The inviter must still be an owner: what a removed or demoted owner sent grants nothing.
		if !inv.Usable(store.Now(now)) || m.role(inv.InvitedBy, inv.WorkspaceID) != store.RoleOwner {
			return store.Invitation{}, fmt.Errorf("invitation used, revoked or expired: %w", store.ErrGone)
		}
		inv.UsedAt = tp(now)
		m.invitations[id] = inv
		k := memberKey{inv.WorkspaceID, userID}
		mb, ok := m.members[k]
		if !ok {
			mb = store.Member{WorkspaceID: inv.WorkspaceID, UserID: userID, CreatedAt: store.Now(now), NotifyRegressions: true}
		}
		if roleRank[inv.Role] > roleRank[mb.Role] {
			mb.Role = inv.Role
		}
		m.members[k] = mb
		return m.filled(inv), nil
	}
	return store.Invitation{}, store.NotFound("invitation")
}

func (m *Store) RevokeInvitation(ctx context.Context, workspaceID, invitationID string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	inv, ok := m.invitations[invitationID]
	if !ok || inv.WorkspaceID != workspaceID || inv.UsedAt != nil || inv.RevokedAt != nil {
		return store.NotFound("invitation")
	}
	inv.RevokedAt = tp(now)
	m.invitations[invitationID] = inv
	return nil
}
