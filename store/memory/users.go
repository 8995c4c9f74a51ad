package memory

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"sitepulse/store"
)

func (m *Store) CreateUser(ctx context.Context, u store.User) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range m.users {
		if strings.EqualFold(o.Email, u.Email) {
			return fmt.Errorf("user %s: %w", u.Email, store.ErrConflict)
		}
	}
	u.CreatedAt = store.Now(u.CreatedAt)
	m.users[u.ID] = u
	m.addPersonalWorkspace(u)
	return nil
}

func (m *Store) UserByEmail(ctx context.Context, email string) (store.User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, u := range m.users {
		if strings.EqualFold(u.Email, email) {
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
