package store

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"
)

func (m *Memory) CreateClient(ctx context.Context, c OAuthClient) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.clients[c.ID]; ok {
		return fmt.Errorf("client %s: %w", c.ID, ErrConflict)
	}
	c.CreatedAt = Now(c.CreatedAt)
	c.RedirectURIs, c.GrantTypes = slices.Clone(c.RedirectURIs), slices.Clone(c.GrantTypes)
	m.clients[c.ID] = c
	return nil
}

func (m *Memory) SaveMetadataClient(ctx context.Context, c OAuthClient) error {
	if !IsMetadataClientID(c.ID) {
		return fmt.Errorf("client %s is a registered one: %w", c.ID, ErrConflict)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c.CreatedAt = Now(c.CreatedAt)
	if old, ok := m.clients[c.ID]; ok {
		c.CreatedAt = old.CreatedAt
	}
	c.SecretHash = ""
	c.RedirectURIs, c.GrantTypes = slices.Clone(c.RedirectURIs), slices.Clone(c.GrantTypes)
	m.clients[c.ID] = c
	return nil
}

func (m *Memory) Client(ctx context.Context, clientID string) (OAuthClient, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.clients[clientID]
	if !ok {
		return OAuthClient{}, notFound("client")
	}
	c.RedirectURIs, c.GrantTypes = slices.Clone(c.RedirectURIs), slices.Clone(c.GrantTypes)
	return c, nil
}

func (m *Memory) CreateAuthRequest(ctx context.Context, r AuthRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.clients[r.ClientID]; !ok {
		return notFound("client")
	}
	r.CreatedAt, r.ExpiresAt = Now(r.CreatedAt), Now(r.ExpiresAt)
	var live []AuthRequest
	for h, o := range m.requests {
		switch {
		case o.UserID != r.UserID:
		case !o.ExpiresAt.After(r.CreatedAt):
			delete(m.requests, h)
		default:
			live = append(live, o)
		}
	}
	sort.Slice(live, func(i, j int) bool { return live[i].CreatedAt.After(live[j].CreatedAt) })
	for _, o := range live[min(len(live), MaxPendingAuthRequests-1):] {
		delete(m.requests, o.IDHash)
	}
	m.requests[r.IDHash] = r
	return nil
}

func (m *Memory) DeleteUnusedClients(ctx context.Context, createdBefore time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	used := map[string]bool{}
	for _, r := range m.requests {
		used[r.ClientID] = true
	}
	for _, c := range m.codes {
		used[c.ClientID] = true
	}
	for _, t := range m.tokens {
		used[t.ClientID] = true
	}
	for _, c := range m.consents {
		used[c.ClientID] = true
	}
	n := 0
	for id, c := range m.clients {
		if !used[id] && c.CreatedAt.Before(createdBefore) {
			delete(m.clients, id)
			n++
		}
	}
	return n, nil
}

func (m *Memory) TakeAuthRequest(ctx context.Context, idHash, userID string, now time.Time) (AuthRequest, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.requests[idHash]
	if !ok || r.UserID != userID {
		return AuthRequest{}, notFound("authorization request")
	}
	delete(m.requests, idHash)
	if !r.ExpiresAt.After(now) {
		return AuthRequest{}, notFound("authorization request")
	}
	return r, nil
}

func (m *Memory) CreateCode(ctx context.Context, c AuthCode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.clients[c.ClientID]; !ok {
		return notFound("client")
	}
	c.CreatedAt, c.ExpiresAt, c.UsedAt = Now(c.CreatedAt), Now(c.ExpiresAt), nil
	m.codes[c.CodeHash] = c
	return nil
}

func (m *Memory) Code(ctx context.Context, codeHash string) (AuthCode, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.codes[codeHash]
	if !ok {
		return AuthCode{}, notFound("code")
	}
	c.UsedAt = cloneTime(c.UsedAt)
	return c, nil
}

func (m *Memory) RedeemCode(ctx context.Context, codeHash string, now time.Time, tokens ...OAuthToken) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.codes[codeHash]
	if !ok {
		return notFound("code")
	}
	if c.UsedAt != nil {
		return fmt.Errorf("code already used: %w", ErrConflict)
	}
	if err := m.createTokens(tokens); err != nil {
		return err
	}
	c.UsedAt = tp(now)
	m.codes[codeHash] = c
	return nil
}

func (m *Memory) CreateTokens(ctx context.Context, tokens ...OAuthToken) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.createTokens(tokens)
}

func (m *Memory) createTokens(tokens []OAuthToken) error {
	for _, t := range tokens {
		if _, ok := m.clients[t.ClientID]; !ok {
			return notFound("client")
		}
		if _, ok := m.tokens[t.TokenHash]; ok {
			return fmt.Errorf("token: %w", ErrConflict)
		}
	}
	for _, t := range tokens {
		t.CreatedAt, t.ExpiresAt, t.UsedAt, t.RevokedAt = Now(t.CreatedAt), Now(t.ExpiresAt), nil, nil
		m.tokens[t.TokenHash] = t
	}
	return nil
}

func (m *Memory) Token(ctx context.Context, tokenHash string) (OAuthToken, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[tokenHash]
	if !ok {
		return OAuthToken{}, notFound("token")
	}
	t.UsedAt, t.RevokedAt = cloneTime(t.UsedAt), cloneTime(t.RevokedAt)
	return t, nil
}

func (m *Memory) RotateRefresh(ctx context.Context, oldHash string, now time.Time, successors ...OAuthToken) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[oldHash]
	if !ok || t.Kind != TokenRefresh {
		return notFound("refresh token")
	}
	if t.UsedAt != nil || t.RevokedAt != nil {
		return fmt.Errorf("refresh token already used: %w", ErrConflict)
	}
	if err := m.createTokens(successors); err != nil {
		return err
	}
	t.UsedAt = tp(now)
	m.tokens[oldHash] = t
	return nil
}

func (m *Memory) RevokeToken(ctx context.Context, tokenHash string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[tokenHash]
	if !ok {
		return nil
	}
	if t.Kind == TokenRefresh {
		m.revokeWhere(func(o OAuthToken) bool { return o.FamilyID == t.FamilyID }, now)
		return nil
	}
	m.revokeWhere(func(o OAuthToken) bool { return o.TokenHash == tokenHash }, now)
	return nil
}

func (m *Memory) RevokeFamily(ctx context.Context, familyID string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.revokeWhere(func(o OAuthToken) bool { return o.FamilyID == familyID }, now)
	return nil
}

func (m *Memory) revokeWhere(match func(OAuthToken) bool, now time.Time) {
	for h, t := range m.tokens {
		if match(t) && t.RevokedAt == nil {
			t.RevokedAt = tp(now)
			m.tokens[h] = t
		}
	}
}

func (m *Memory) SaveConsent(ctx context.Context, c Consent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cl, ok := m.clients[c.ClientID]
	if !ok {
		return notFound("client")
	}
	c.ClientName, c.CreatedAt = cl.Name, Now(c.CreatedAt)
	m.consents[[2]string{c.UserID, c.ClientID}] = c
	return nil
}

func (m *Memory) Consents(ctx context.Context, userID string) ([]Consent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Consent{}
	for k, c := range m.consents {
		if k[0] == userID {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ClientID < out[j].ClientID
	})
	return out, nil
}

func (m *Memory) RevokeConsent(ctx context.Context, userID, clientID string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{userID, clientID}
	if _, ok := m.consents[k]; !ok {
		return notFound("consent")
	}
	delete(m.consents, k)
	m.revokeWhere(func(t OAuthToken) bool { return t.UserID == userID && t.ClientID == clientID }, now)
	return nil
}
