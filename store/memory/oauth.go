package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"sitepulse/store"
)

func (m *Store) CreateClient(ctx context.Context, c store.OAuthClient) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.clients[c.ID]; ok {
		return fmt.Errorf("client %s: %w", c.ID, store.ErrConflict)
	}
	c.CreatedAt = store.Now(c.CreatedAt)
	c.RedirectURIs, c.GrantTypes = slices.Clone(c.RedirectURIs), slices.Clone(c.GrantTypes)
	m.clients[c.ID] = c
	return nil
}

func (m *Store) SaveMetadataClient(ctx context.Context, c store.OAuthClient) error {
	if !store.IsMetadataClientID(c.ID) {
		return fmt.Errorf("client %s is a registered one: %w", c.ID, store.ErrConflict)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c.CreatedAt = store.Now(c.CreatedAt)
	if old, ok := m.clients[c.ID]; ok {
		c.CreatedAt = old.CreatedAt
	}
	c.SecretHash = ""
	c.RedirectURIs, c.GrantTypes = slices.Clone(c.RedirectURIs), slices.Clone(c.GrantTypes)
	m.clients[c.ID] = c
	return nil
}

func (m *Store) Client(ctx context.Context, clientID string) (store.OAuthClient, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.clients[clientID]
	if !ok {
		return store.OAuthClient{}, store.NotFound("client")
	}
	c.RedirectURIs, c.GrantTypes = slices.Clone(c.RedirectURIs), slices.Clone(c.GrantTypes)
	return c, nil
}

func (m *Store) CreateAuthRequest(ctx context.Context, r store.AuthRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.clients[r.ClientID]; !ok {
		return store.NotFound("client")
	}
	r.CreatedAt, r.ExpiresAt = store.Now(r.CreatedAt), store.Now(r.ExpiresAt)
	var live []store.AuthRequest
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
	for _, o := range live[min(len(live), store.MaxPendingAuthRequests-1):] {
		delete(m.requests, o.IDHash)
	}
	m.requests[r.IDHash] = r
	return nil
}

func (m *Store) DeleteUnusedClients(ctx context.Context, createdBefore time.Time) (int, error) {
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

func (m *Store) TakeAuthRequest(ctx context.Context, idHash, userID string, now time.Time) (store.AuthRequest, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.requests[idHash]
	if !ok || r.UserID != userID {
		return store.AuthRequest{}, store.NotFound("authorization request")
	}
	delete(m.requests, idHash)
	if !r.ExpiresAt.After(now) {
		return store.AuthRequest{}, store.NotFound("authorization request")
	}
	return r, nil
}

func (m *Store) CreateCode(ctx context.Context, c store.AuthCode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.clients[c.ClientID]; !ok {
		return store.NotFound("client")
	}
	c.CreatedAt, c.ExpiresAt, c.UsedAt = store.Now(c.CreatedAt), store.Now(c.ExpiresAt), nil
	m.codes[c.CodeHash] = c
	return nil
}

func (m *Store) Code(ctx context.Context, codeHash string) (store.AuthCode, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.codes[codeHash]
	if !ok {
		return store.AuthCode{}, store.NotFound("code")
	}
	c.UsedAt = cloneTime(c.UsedAt)
	return c, nil
}

func (m *Store) RedeemCode(ctx context.Context, codeHash string, now time.Time, tokens ...store.OAuthToken) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.codes[codeHash]
	if !ok {
		return store.NotFound("code")
	}
	if c.UsedAt != nil {
		return fmt.Errorf("code already used: %w", store.ErrConflict)
	}
	if err := m.createTokens(tokens); err != nil {
		return err
	}
	c.UsedAt = tp(now)
	m.codes[codeHash] = c
	return nil
}

func (m *Store) CreateTokens(ctx context.Context, tokens ...store.OAuthToken) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.createTokens(tokens)
}

func (m *Store) createTokens(tokens []store.OAuthToken) error {
	for _, t := range tokens {
		if _, ok := m.clients[t.ClientID]; !ok {
			return store.NotFound("client")
		}
		if _, ok := m.tokens[t.TokenHash]; ok {
			return fmt.Errorf("token: %w", store.ErrConflict)
		}
	}
	for _, t := range tokens {
		t.CreatedAt, t.ExpiresAt, t.UsedAt, t.RevokedAt = store.Now(t.CreatedAt), store.Now(t.ExpiresAt), nil, nil
		m.tokens[t.TokenHash] = t
	}
	return nil
}

func (m *Store) Token(ctx context.Context, tokenHash string) (store.OAuthToken, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[tokenHash]
	if !ok {
		return store.OAuthToken{}, store.NotFound("token")
	}
	t.UsedAt, t.RevokedAt = cloneTime(t.UsedAt), cloneTime(t.RevokedAt)
	return t, nil
}

func (m *Store) RotateRefresh(ctx context.Context, oldHash string, now time.Time, successors ...store.OAuthToken) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[oldHash]
	if !ok || t.Kind != store.TokenRefresh {
		return store.NotFound("refresh token")
	}
	if t.UsedAt != nil || t.RevokedAt != nil {
		return fmt.Errorf("refresh token already used: %w", store.ErrConflict)
	}
	if err := m.createTokens(successors); err != nil {
		return err
	}
	t.UsedAt = tp(now)
	m.tokens[oldHash] = t
	return nil
}

func (m *Store) RevokeToken(ctx context.Context, tokenHash string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[tokenHash]
	if !ok {
		return nil
	}
	if t.Kind == store.TokenRefresh {
		m.revokeWhere(func(o store.OAuthToken) bool { return o.FamilyID == t.FamilyID }, now)
		return nil
	}
	m.revokeWhere(func(o store.OAuthToken) bool { return o.TokenHash == tokenHash }, now)
	return nil
}

func (m *Store) RevokeFamily(ctx context.Context, familyID string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.revokeWhere(func(o store.OAuthToken) bool { return o.FamilyID == familyID }, now)
	return nil
}

func (m *Store) revokeWhere(match func(store.OAuthToken) bool, now time.Time) {
	for h, t := range m.tokens {
		if match(t) && t.RevokedAt == nil {
			t.RevokedAt = tp(now)
			m.tokens[h] = t
		}
	}
}

func (m *Store) SaveConsent(ctx context.Context, c store.Consent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cl, ok := m.clients[c.ClientID]
	if !ok {
		return store.NotFound("client")
	}
	c.ClientName, c.CreatedAt = cl.Name, store.Now(c.CreatedAt)
	m.consents[[2]string{c.UserID, c.ClientID}] = c
	return nil
}

func (m *Store) Consents(ctx context.Context, userID string) ([]store.Consent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.Consent{}
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

func (m *Store) RevokeConsent(ctx context.Context, userID, clientID string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{userID, clientID}
	if _, ok := m.consents[k]; !ok {
		return store.NotFound("consent")
	}
	delete(m.consents, k)
	m.revokeWhere(func(t store.OAuthToken) bool { return t.UserID == userID && t.ClientID == clientID }, now)
	return nil
}

func (m *Store) EndGrantsSince(ctx context.Context, userID string, since, now time.Time) ([]store.Consent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	since = store.Now(since)
	ended, gone := map[string]store.Consent{}, map[string]bool{} // by client; gone: its consent
	for k, c := range m.consents {
		if k[0] == userID && !c.CreatedAt.Before(since) {
			delete(m.consents, k)
			ended[k[1]], gone[k[1]] = c, true
		}
	}
	began := map[string]time.Time{} // each family of the user, when its first token was issued
	live := map[string]bool{}       // the families with a token not revoked
	for _, t := range m.tokens {
		if t.UserID == userID {
			if b, ok := began[t.FamilyID]; !ok || t.CreatedAt.Before(b) {
				began[t.FamilyID] = t.CreatedAt
			}
			live[t.FamilyID] = live[t.FamilyID] || t.RevokedAt == nil
		}
	}
	for _, t := range m.tokens {
		if _, named := ended[t.ClientID]; t.UserID == userID && !named && live[t.FamilyID] && !began[t.FamilyID].Before(since) {
			ended[t.ClientID] = store.Consent{UserID: userID, ClientID: t.ClientID, ClientName: m.clients[t.ClientID].Name, CreatedAt: store.Now(now)}
		}
	}
	m.revokeWhere(func(t store.OAuthToken) bool {
		if t.UserID != userID {
			return false
		}
		return gone[t.ClientID] || !began[t.FamilyID].Before(since)
	}, now)
	out := make([]store.Consent, 0, len(ended))
	for _, c := range ended {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ClientID < out[j].ClientID
	})
	return out, nil
}
