package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

func (m *Memory) CreateUser(ctx context.Context, u User) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range m.users {
		if strings.EqualFold(o.Email, u.Email) {
			return fmt.Errorf("user %s: %w", u.Email, ErrConflict)
		}
	}
	u.CreatedAt = Now(u.CreatedAt)
	m.users[u.ID] = u
	return nil
}

func (m *Memory) UserByEmail(ctx context.Context, email string) (User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, u := range m.users {
		if strings.EqualFold(u.Email, email) {
			return u, nil
		}
	}
	return User{}, notFound("user")
}

func (m *Memory) UserByID(ctx context.Context, id string) (User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[id]
	if !ok {
		return User{}, notFound("user")
	}
	return u, nil
}

func (m *Memory) SetPasswordHash(ctx context.Context, userID, hash string) error {
	return m.updateUser(userID, func(u *User) { u.PasswordHash = hash })
}

func (m *Memory) SetNotifyRegressions(ctx context.Context, userID string, on bool) error {
	return m.updateUser(userID, func(u *User) { u.NotifyRegressions = on })
}

func (m *Memory) updateUser(id string, f func(*User)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[id]
	if !ok {
		return notFound("user")
	}
	f(&u)
	m.users[id] = u
	return nil
}

func (m *Memory) CreateSession(ctx context.Context, s Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[s.UserID]; !ok {
		return notFound("user")
	}
	s.CreatedAt, s.ExpiresAt, s.SeenAt = Now(s.CreatedAt), Now(s.ExpiresAt), Now(s.CreatedAt)
	m.sessions[s.TokenHash] = s
	return nil
}

func (m *Memory) TouchSession(ctx context.Context, tokenHash string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[tokenHash]; ok {
		s.SeenAt = Now(now)
		m.sessions[tokenHash] = s
	}
	return nil
}

func (m *Memory) SessionByHash(ctx context.Context, tokenHash string, now time.Time) (Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[tokenHash]
	if !ok || !s.ExpiresAt.After(now) {
		return Session{}, notFound("session")
	}
	return s, nil
}

func (m *Memory) DeleteSession(ctx context.Context, tokenHash string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, tokenHash)
	return nil
}

func (m *Memory) CreateAPIKey(ctx context.Context, k APIKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[k.UserID]; !ok {
		return notFound("user")
	}
	for _, o := range m.apiKeys {
		if o.KeyHash == k.KeyHash {
			return fmt.Errorf("api key: %w", ErrConflict)
		}
	}
	k.CreatedAt = Now(k.CreatedAt)
	m.apiKeys[k.ID] = k
	return nil
}

func (m *Memory) APIKeys(ctx context.Context, userID string) ([]APIKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []APIKey{}
	for _, k := range m.apiKeys {
		if k.UserID == userID && !m.revoked[k.ID] {
			k.LastUsedAt = cloneTime(k.LastUsedAt)
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

func (m *Memory) APIKeyByHash(ctx context.Context, keyHash string, now time.Time) (APIKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, k := range m.apiKeys {
		if k.KeyHash == keyHash && !m.revoked[id] {
			if k.LastUsedAt == nil || !k.LastUsedAt.After(Now(now).Add(-KeyUseGranularity)) {
				k.LastUsedAt = tp(now)
				m.apiKeys[id] = k
			}
			k.LastUsedAt = cloneTime(k.LastUsedAt)
			return k, nil
		}
	}
	return APIKey{}, notFound("api key")
}

func (m *Memory) RevokeAPIKey(ctx context.Context, userID, keyID string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.apiKeys[keyID]
	if !ok || k.UserID != userID || m.revoked[keyID] {
		return notFound("api key")
	}
	m.revoked[keyID] = true
	return nil
}
