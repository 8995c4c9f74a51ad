package memory

import (
	"context"
	"fmt"

	"sitepulse/store"
)

func (m *Store) SetWorkspaceProvider(ctx context.Context, userID string, w store.WorkspaceProvider) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch role := m.role(userID, w.WorkspaceID); {
	case role == "":
		return store.NotFound("workspace")
	case role != store.RoleOwner:
		return fmt.Errorf("workspace provider: %w", store.ErrForbidden)
	}
	if _, ok := m.workspaces[w.WorkspaceID]; !ok {
		return store.NotFound("workspace")
	}
	if m.providers == nil {
		m.providers = map[string]store.WorkspaceProvider{}
	}
	for id, o := range m.providers {
		if _, live := m.workspaces[id]; live && id != w.WorkspaceID && o.Issuer == w.Issuer {
			return fmt.Errorf("workspace provider: %w", store.ErrConflict)
		}
	}
	w.UpdatedAt = store.Now(w.UpdatedAt)
	m.providers[w.WorkspaceID] = w
	return nil
}

func (m *Store) WorkspaceProviderOf(ctx context.Context, workspaceID string) (store.WorkspaceProvider, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.providers[store.CanonicalID(workspaceID)]
	if _, live := m.workspaces[w.WorkspaceID]; !ok || !live {
		return store.WorkspaceProvider{}, store.NotFound("workspace provider")
	}
	return w, nil
}

func (m *Store) WorkspaceProviderByIssuer(ctx context.Context, issuer string) (store.WorkspaceProvider, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, w := range m.providers {
		if _, live := m.workspaces[id]; live && w.Issuer == issuer {
			return w, nil
		}
	}
	return store.WorkspaceProvider{}, store.NotFound("workspace provider")
}

func (m *Store) RemoveWorkspaceProvider(ctx context.Context, userID, workspaceID string) (store.WorkspaceProvider, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ssoMaps()
	workspaceID = store.CanonicalID(workspaceID)
	switch role := m.role(userID, workspaceID); {
	case role == "":
		return store.WorkspaceProvider{}, store.NotFound("workspace")
	case role != store.RoleOwner:
		return store.WorkspaceProvider{}, fmt.Errorf("workspace provider: %w", store.ErrForbidden)
	}
	w, ok := m.providers[workspaceID]
	if !ok {
		return w, store.NotFound("workspace provider")
	}
	if m.rule(workspaceID).RequiredAt != nil {
		return store.WorkspaceProvider{}, fmt.Errorf("workspace provider: single sign-on is required: %w", store.ErrConflict)
	}
	delete(m.providers, workspaceID)
	return w, nil
}

func (m *Store) AnyWorkspaceProvider(ctx context.Context) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.providers {
		if _, live := m.workspaces[id]; live {
			return true, nil
		}
	}
	return false, nil
}
