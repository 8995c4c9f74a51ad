package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"sitepulse/store"
)

type identityKey [2]string // issuer, subject

// ssoMaps makes the single sign-on maps at first use; the caller holds m.mu.
func (m *Store) ssoMaps() {
	if m.identities == nil {
		m.identities = map[identityKey]store.Identity{}
		m.ssoRules = map[string]store.WorkspaceSSO{}
	}
}

// liveIdentity is the identity of key when its account still exists (an account's deletion
// takes its identities with it, as ON DELETE CASCADE does); the caller holds m.mu.
func (m *Store) liveIdentity(k identityKey) (store.Identity, bool) {
	m.ssoMaps()
	id, ok := m.identities[k]
	if ok {
		if _, user := m.users[id.UserID]; !user {
			delete(m.identities, k)
			return store.Identity{}, false
		}
	}
	return id, ok
}

func (m *Store) Identity(ctx context.Context, issuer, subject string) (store.Identity, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.liveIdentity(identityKey{issuer, subject})
	if !ok {
		return store.Identity{}, store.NotFound("identity")
	}
	return id, nil
}

func (m *Store) CreateIdentityUser(ctx context.Context, u store.User, id store.Identity) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.liveIdentity(identityKey{id.Issuer, id.Subject}); ok {
		return fmt.Errorf("identity: %w", store.ErrConflict)
	}
	u, err := m.addUser(u)
	if err != nil {
		return err
	}
	id.UserID = u.ID
	m.putIdentity(id)
	return nil
}

func (m *Store) putIdentity(id store.Identity) {
	id.CreatedAt, id.CheckedAt = store.Now(id.CreatedAt), store.Now(id.CheckedAt)
	id.LostAt = nil
	m.identities[identityKey{id.Issuer, id.Subject}] = id
}

func (m *Store) LinkIdentity(ctx context.Context, id store.Identity) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[id.UserID]; !ok {
		return store.NotFound("user")
	}
	if _, ok := m.liveIdentity(identityKey{id.Issuer, id.Subject}); ok {
		return fmt.Errorf("identity: %w", store.ErrConflict)
	}
	for k, o := range m.identities {
		if o.UserID == id.UserID && k[0] == id.Issuer {
			return fmt.Errorf("identity of the account at this issuer: %w", store.ErrConflict)
		}
	}
	m.putIdentity(id)
	return nil
}

func (m *Store) IdentitiesOf(ctx context.Context, userID string) ([]store.Identity, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ssoMaps()
	out := []store.Identity{}
	for _, id := range m.identities {
		if id.UserID == userID {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(a, b store.Identity) int { return strings.Compare(a.Issuer+a.Subject, b.Issuer+b.Subject) })
	return out, nil
}

func (m *Store) Vouched(ctx context.Context, issuer, subject, refreshSealed string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := identityKey{issuer, subject}
	id, ok := m.liveIdentity(k)
	if !ok {
		return store.NotFound("identity")
	}
	id.RefreshSealed, id.CheckedAt, id.LostAt = refreshSealed, store.Now(now), nil
	m.identities[k] = id
	for h, s := range m.sessions {
		if s.SSOIssuer == issuer && s.SSOSubject == subject {
			s.SSOCheckedAt = store.Now(now)
			m.sessions[h] = s
		}
	}
	return nil
}

func (m *Store) LoseVouch(ctx context.Context, issuer, subject string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := identityKey{issuer, subject}
	id, ok := m.liveIdentity(k)
	if !ok {
		return store.NotFound("identity")
	}
	at := store.Now(now)
	id.LostAt, id.RefreshSealed = &at, ""
	m.identities[k] = id
	for h, s := range m.sessions {
		if s.SSOIssuer == issuer && s.SSOSubject == subject {
			delete(m.sessions, h)
		}
	}
	return nil
}

func (m *Store) WorkspaceSSO(ctx context.Context, userID, workspaceID string) (store.WorkspaceSSO, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ssoMaps()
	if !m.canRead(userID, workspaceID) {
		return store.WorkspaceSSO{}, store.NotFound("workspace")
	}
	return m.rule(workspaceID), nil
}

func (m *Store) rule(workspaceID string) store.WorkspaceSSO {
	if w, ok := m.ssoRules[workspaceID]; ok {
		return w
	}
	return store.WorkspaceSSO{WorkspaceID: workspaceID}
}

func (m *Store) SetWorkspaceSSO(ctx context.Context, userID string, w store.WorkspaceSSO) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ssoMaps()
	switch role := m.role(userID, w.WorkspaceID); {
	case role == "":
		return store.NotFound("workspace")
	case role != store.RoleOwner:
		return fmt.Errorf("sso settings: %w", store.ErrForbidden)
	}
	if _, ok := m.workspaces[w.WorkspaceID]; !ok {
		return store.NotFound("workspace")
	}
	for id, o := range m.ssoRules {
		if id != w.WorkspaceID && w.Domain != "" && o.Domain == w.Domain && o.VerifiedAt != nil && w.VerifiedAt != nil {
			return fmt.Errorf("domain %s: %w", w.Domain, store.ErrConflict)
		}
	}
	w.UpdatedAt = store.Now(w.UpdatedAt)
	w.VerifiedAt, w.RequiredAt = nowPtr(w.VerifiedAt), nowPtr(w.RequiredAt)
	m.ssoRules[w.WorkspaceID] = w
	return nil
}

func nowPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := store.Now(*t)
	return &v
}

func (m *Store) SSORule(ctx context.Context, workspaceID string) (store.WorkspaceSSO, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ssoMaps()
	return m.rule(workspaceID), nil
}

func (m *Store) SSORulesForDomain(ctx context.Context, domain string) ([]store.WorkspaceSSO, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ssoMaps()
	out := []store.WorkspaceSSO{}
	for _, w := range m.ssoRules {
		if w.Domain == domain && w.VerifiedAt != nil {
			if _, ok := m.workspaces[w.WorkspaceID]; ok {
				out = append(out, w)
			}
		}
	}
	slices.SortFunc(out, func(a, b store.WorkspaceSSO) int { return strings.Compare(a.WorkspaceID, b.WorkspaceID) })
	return out, nil
}

func (m *Store) JoinJustInTime(ctx context.Context, workspaceID, userID string, role store.Role, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.workspaces[workspaceID]; !ok {
		return false, store.NotFound("workspace")
	}
	if _, ok := m.users[userID]; !ok {
		return false, store.NotFound("user")
	}
	if m.role(userID, workspaceID) != "" {
		return false, nil
	}
	m.members[memberKey{workspaceID, userID}] = store.Member{WorkspaceID: workspaceID, UserID: userID, Role: role, CreatedAt: store.Now(now), NotifyRegressions: true}
	return true, nil
}
