package memory

import (
	"context"
	"fmt"
	"sort"
	"time"

	"sitepulse/store"
)

func (m *Store) CreateUser(ctx context.Context, u store.User) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, err := m.addUser(u)
	return err
}

// addUser stores the account with its personal workspace (CreateUser, CreateIdentityUser) and
// answers it as stored; the caller holds m.mu.
func (m *Store) addUser(u store.User) (store.User, error) {
	u.Email = store.CanonicalEmail(u.Email)
	for _, o := range m.users {
		if o.Email == u.Email {
			return u, fmt.Errorf("user %s: %w", u.Email, store.ErrConflict)
		}
	}
	u.CreatedAt = store.Now(u.CreatedAt)
	u.PasswordChangedAt = u.CreatedAt
	m.users[u.ID] = u
	m.addPersonalWorkspace(u)
	return u, nil
}

func (m *Store) UserByEmail(ctx context.Context, email string) (store.User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	email = store.CanonicalEmail(email)
	for _, u := range m.users {
		if u.Email == email {
			return u, nil
		}
	}
	return store.User{}, store.NotFound("user")
}

func (m *Store) UserByID(ctx context.Context, id string) (store.User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[id]
	if !ok {
		return store.User{}, store.NotFound("user")
	}
	return u, nil
}

func (m *Store) SetPasswordHash(ctx context.Context, userID, hash string) error {
	return m.updateUser(userID, func(u *store.User) { u.PasswordHash = hash })
}

// SetNotifyRegressions sets the account's setting, which is its personal workspace's too.
func (m *Store) SetNotifyRegressions(ctx context.Context, userID string, on bool) error {
	return m.updateUser(userID, func(u *store.User) {
		u.NotifyRegressions = on
		k := memberKey{store.PersonalWorkspace(userID), userID}
		if mb, ok := m.members[k]; ok {
			mb.NotifyRegressions = on
			m.members[k] = mb
		}
	})
}

func (m *Store) updateUser(id string, f func(*store.User)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[id]
	if !ok {
		return store.NotFound("user")
	}
	f(&u)
	m.users[id] = u
	return nil
}

func (m *Store) CreateSession(ctx context.Context, s store.Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[s.UserID]; !ok {
		return store.NotFound("user")
	}
	s.CreatedAt, s.ExpiresAt, s.SeenAt = store.Now(s.CreatedAt), store.Now(s.ExpiresAt), store.Now(s.CreatedAt)
	if s.SSOIssuer != "" {
		s.SSOCheckedAt = store.Now(s.SSOCheckedAt)
	}
	m.sessions[s.TokenHash] = s
	return nil
}

func (m *Store) TouchSession(ctx context.Context, tokenHash string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[tokenHash]; ok {
		s.SeenAt = store.Now(now)
		m.sessions[tokenHash] = s
	}
	return nil
}

func (m *Store) SessionByHash(ctx context.Context, tokenHash string, now time.Time) (store.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[tokenHash]
	if !ok || !s.ExpiresAt.After(now) {
		return store.Session{}, store.NotFound("session")
	}
	u, ok := m.users[s.UserID]
	if !ok {
		return store.Session{}, store.NotFound("session")
	}
	s.User = u
	return s, nil
}

func (m *Store) DeleteSession(ctx context.Context, tokenHash string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, tokenHash)
	return nil
}

func (m *Store) CreateAPIKey(ctx context.Context, k store.APIKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[k.UserID]; !ok {
		return store.NotFound("user")
	}
	if k.WorkspaceID == "" {
		k.WorkspaceID = store.PersonalWorkspace(k.UserID)
	}
	if !m.canEdit(k.UserID, k.WorkspaceID) {
		return store.NotFound("workspace")
	}
	k.WorkspaceName = ""
	for _, o := range m.apiKeys {
		if o.KeyHash == k.KeyHash {
			return fmt.Errorf("api key: %w", store.ErrConflict)
		}
	}
	k.CreatedAt = store.Now(k.CreatedAt)
	m.apiKeys[k.ID] = k
	return nil
}

func (m *Store) APIKeys(ctx context.Context, userID string) ([]store.APIKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.APIKey{}
	for _, k := range m.apiKeys {
		if k.UserID == userID && !m.revoked[k.ID] {
			k.LastUsedAt = cloneTime(k.LastUsedAt)
			k.WorkspaceName = m.workspaces[k.WorkspaceID].Name
			out = append(out, k)
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

// APIKeyByHash is written twice: api_key_by_hash and budget_key (Postgres, migration
// 026_hot_path_functions.sql) are the same rule in PL/pgSQL. The contract tests testKeyWorkspace,
// testBudgetInputsByKey and testAPIKeys keep them equal (rulesWrittenTwice in
// store/storetest/twice_test.go): change both, run them on both stores.
func (m *Store) APIKeyByHash(ctx context.Context, keyHash string, now time.Time) (store.APIKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, k := range m.apiKeys {
		// A key works while its maker is a member of its workspace.
		if k.KeyHash == keyHash && !m.revoked[id] && m.canRead(k.UserID, k.WorkspaceID) {
			if k.LastUsedAt == nil || !k.LastUsedAt.After(store.Now(now).Add(-store.KeyUseGranularity)) {
				k.LastUsedAt = tp(now)
				m.apiKeys[id] = k
			}
			k.LastUsedAt = cloneTime(k.LastUsedAt)
			k.WorkspaceName = m.workspaces[k.WorkspaceID].Name
			return k, nil
		}
	}
	return store.APIKey{}, store.NotFound("api key")
}

func (m *Store) RevokeAPIKey(ctx context.Context, userID, keyID string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.apiKeys[keyID]
	if !ok || k.UserID != userID || m.revoked[keyID] {
		return store.NotFound("api key")
	}
	m.revoked[keyID] = true
	return nil
}

func (m *Store) CreateAccountLink(ctx context.Context, l store.AccountLink) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[l.UserID]; !ok {
		return store.NotFound("user")
	}
	l.CreatedAt, l.ExpiresAt = store.Now(l.CreatedAt), store.Now(l.ExpiresAt)
	for h, o := range m.accountLinks {
		if o.UserID == l.UserID && (o.Purpose == l.Purpose || o.UsedAt != nil || !o.ExpiresAt.After(l.CreatedAt)) {
			delete(m.accountLinks, h)
		}
	}
	if _, ok := m.accountLinks[l.TokenHash]; ok {
		return fmt.Errorf("account link: %w", store.ErrConflict)
	}
	l.Email, l.UsedAt = store.CanonicalEmail(l.Email), nil
	m.accountLinks[l.TokenHash] = l
	return nil
}

func (m *Store) AccountLink(ctx context.Context, tokenHash string, purpose store.LinkPurpose, now time.Time) (store.AccountLink, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.accountLinks[tokenHash]
	if !ok || l.Purpose != purpose {
		return store.AccountLink{}, store.NotFound("account link")
	}
	l.UsedAt = cloneTime(l.UsedAt)
	if l.UsedAt != nil || !l.ExpiresAt.After(now) {
		return l, fmt.Errorf("account link used or expired: %w", store.ErrGone)
	}
	return l, nil
}

// takeLink marks a link of the purpose used, as Postgres's takeLink; the caller holds m.mu.
func (m *Store) takeLink(tokenHash string, purpose store.LinkPurpose, now time.Time) (store.AccountLink, error) {
	l, ok := m.accountLinks[tokenHash]
	switch {
	case !ok || l.Purpose != purpose:
		return l, store.NotFound("account link")
	case l.UsedAt != nil || !l.ExpiresAt.After(now):
		return l, fmt.Errorf("account link used or expired: %w", store.ErrGone)
	}
	l.UsedAt = tp(now)
	m.accountLinks[tokenHash] = l
	return l, nil
}

// setPassword is the rule ResetPassword and ChangePassword share; the caller holds m.mu.
func (m *Store) setPassword(userID, hash, keep string, now time.Time) error {
	u, ok := m.users[userID]
	if !ok {
		return store.NotFound("user")
	}
	u.PasswordHash, u.PasswordChangedAt = hash, store.Now(now)
	m.users[userID] = u
	m.endSessions(userID, keep)
	m.dropPendingLinks(userID)
	return nil
}

func (m *Store) endSessions(userID, keep string) int {
	n := 0
	for h, s := range m.sessions {
		if s.UserID == userID && h != keep {
			delete(m.sessions, h)
			n++
		}
	}
	return n
}

func (m *Store) dropPendingLinks(userID string) {
	for h, l := range m.accountLinks {
		if l.UserID == userID && l.UsedAt == nil {
			delete(m.accountLinks, h)
		}
	}
}

func (m *Store) ResetPassword(ctx context.Context, tokenHash, passwordHash string, now time.Time) (store.User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, err := m.takeLink(tokenHash, store.LinkReset, now)
	if err != nil {
		return store.User{}, err
	}
	if err := m.setPassword(l.UserID, passwordHash, "", now); err != nil {
		return store.User{}, err
	}
	return m.users[l.UserID], nil
}

func (m *Store) ChangePassword(ctx context.Context, userID, passwordHash, keepSession string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.setPassword(userID, passwordHash, keepSession, now)
}

func (m *Store) ConfirmEmail(ctx context.Context, tokenHash string, now time.Time) (store.User, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.accountLinks[tokenHash]
	if ok && l.Purpose == store.LinkEmail {
		for id, o := range m.users {
			if o.Email == l.Email && id != l.UserID {
				return store.User{}, "", fmt.Errorf("user %s: %w", l.Email, store.ErrConflict)
			}
		}
	}
	l, err := m.takeLink(tokenHash, store.LinkEmail, now)
	if err != nil {
		return store.User{}, "", err
	}
	old, ok := m.users[l.UserID]
	if !ok {
		return store.User{}, "", store.NotFound("user")
	}
	u := old
	u.Email = l.Email
	m.users[u.ID] = u
	m.dropPendingLinks(u.ID)
	return old, l.Email, nil
}

func (m *Store) SessionsOf(ctx context.Context, userID string, now time.Time) ([]store.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.Session{}
	for _, s := range m.sessions {
		if s.UserID == userID && s.ExpiresAt.After(now) {
			s.CSRF, s.User = "", store.User{}
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case !a.SeenAt.Equal(b.SeenAt):
			return a.SeenAt.After(b.SeenAt)
		case !a.CreatedAt.Equal(b.CreatedAt):
			return a.CreatedAt.After(b.CreatedAt)
		}
		return a.TokenHash < b.TokenHash
	})
	return out, nil
}

func (m *Store) EndSessions(ctx context.Context, userID, keepSession string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.endSessions(userID, keepSession), nil
}

// accountUse sorts the user's workspaces by store.AccountUseOf; the caller holds m.mu.
func (m *Store) accountUse(userID string) store.AccountUse {
	var ws []store.Workspace
	for k, mb := range m.members {
		if k[1] == userID {
			w := m.workspaces[k[0]]
			w.Role = mb.Role
			ws = append(ws, w)
		}
	}
	sortWorkspaces(ws, userID)
	others, owners := make([]int, len(ws)), make([]int, len(ws))
	for i, w := range ws {
		for k, mb := range m.members {
			if k[0] == w.ID && k[1] != userID {
				others[i]++
				if mb.Role == store.RoleOwner {
					owners[i]++
				}
			}
		}
	}
	return store.AccountUseOf(userID, ws, others, owners)
}

func (m *Store) AccountUse(ctx context.Context, userID string) (store.AccountUse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[userID]; !ok {
		return store.AccountUse{}, store.NotFound("user")
	}
	return m.accountUse(userID), nil
}

func (m *Store) DeleteAccount(ctx context.Context, userID string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[userID]; !ok {
		return nil, store.NotFound("user")
	}
	use := m.accountUse(userID)
	if len(use.InUse) > 0 {
		return nil, &store.AccountInUseError{Workspaces: use.InUse}
	}
	var deleted []string
	for _, w := range use.Deleted {
		m.dropWorkspace(w.ID)
		deleted = append(deleted, w.ID)
	}
	for k := range m.members {
		if k[1] == userID {
			delete(m.members, k)
			m.handOver(k[0], userID)
		}
	}
	// What Postgres deletes with the user (ON DELETE CASCADE).
	m.endSessions(userID, "")
	for h, l := range m.accountLinks {
		if l.UserID == userID {
			delete(m.accountLinks, h)
		}
	}
	for id, k := range m.apiKeys {
		if k.UserID == userID {
			delete(m.apiKeys, id)
			delete(m.revoked, id)
		}
	}
	for h, r := range m.requests {
		if r.UserID == userID {
			delete(m.requests, h)
		}
	}
	for h, c := range m.codes {
		if c.UserID == userID {
			delete(m.codes, h)
		}
	}
	for h, t := range m.tokens {
		if t.UserID == userID {
			delete(m.tokens, h)
		}
	}
	for k := range m.consents {
		if k[0] == userID {
			delete(m.consents, k)
		}
	}
	for h, st := range m.platformStates {
		if st.userID == userID {
			delete(m.platformStates, h)
		}
	}
	for id, inv := range m.invitations {
		if inv.InvitedBy == userID {
			delete(m.invitations, id)
		}
	}
	// Rows still naming the user (made in a workspace they left before hand-overs existed).
	for id, r := range m.reports {
		if r.UserID == userID {
			delete(m.reports, id)
		}
	}
	for id, s := range m.sites {
		if s.UserID == userID {
			m.dropSite(id)
		}
	}
	delete(m.users, userID)
	return deleted, nil
}
