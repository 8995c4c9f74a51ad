package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"sitepulse/store"
)

// memRunners are the runner tokens and the audits leased to runners (runners.go). The lease
// rule is written twice: store/postgres/runners.go's leaseRunnerSQL is the same in SQL, and the
// contract tests (store/storetest/runners_test.go) keep them equal.
type memRunners struct {
	tokens    map[string]store.RunnerToken
	audits    map[string]store.RunnerAudit
	locations map[string][]string
}

func (m *Store) runnersInit() {
	if m.runners.tokens == nil {
		m.runners = memRunners{tokens: map[string]store.RunnerToken{}, audits: map[string]store.RunnerAudit{}, locations: map[string][]string{}}
	}
}

func (m *Store) CreateRunnerToken(ctx context.Context, t store.RunnerToken) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnersInit()
	if t.WorkspaceID != "" {
		if _, ok := m.workspaces[t.WorkspaceID]; !ok {
			return store.NotFound("workspace")
		}
	}
	for _, o := range m.runners.tokens {
		if o.TokenHash == t.TokenHash || o.ID == t.ID {
			return store.ErrConflict
		}
	}
	m.runners.tokens[t.ID] = t
	return nil
}

// liveToken answers whether t is stored, unrevoked and its workspace (if any) still exists.
func (m *Store) liveToken(t store.RunnerToken) bool {
	if t.ID == "" || t.RevokedAt != nil {
		return false
	}
	if t.WorkspaceID != "" {
		if _, ok := m.workspaces[t.WorkspaceID]; !ok {
			return false
		}
	}
	return true
}

func (m *Store) RunnerTokens(ctx context.Context, workspaceID string) ([]store.RunnerToken, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnersInit()
	out := []store.RunnerToken{}
	for _, t := range m.runners.tokens {
		if t.WorkspaceID == workspaceID && m.liveToken(t) {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

func (m *Store) RevokeRunnerToken(ctx context.Context, workspaceID, tokenID string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnersInit()
	t, ok := m.runners.tokens[tokenID]
	if !ok || t.WorkspaceID != workspaceID || t.RevokedAt != nil {
		return store.NotFound("runner token")
	}
	at := now.UTC()
	t.RevokedAt = &at
	m.runners.tokens[tokenID] = t
	for id, a := range m.runners.audits { // its leases go back to the queue at once
		if a.State == store.RunnerLeased && a.TokenID == tokenID {
			a.State, a.LeaseID, a.TokenID, a.Runner, a.Location, a.LeaseUntil = store.RunnerQueued, "", "", "", "", time.Time{}
			m.runners.audits[id] = a
		}
	}
	return nil
}

func (m *Store) RunnerTokenByHash(ctx context.Context, hash string) (store.RunnerToken, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnersInit()
	for _, t := range m.runners.tokens {
		if t.TokenHash == hash && m.liveToken(t) {
			return t, nil
		}
	}
	return store.RunnerToken{}, store.NotFound("runner token")
}

func (m *Store) RunnersServe(ctx context.Context, workspaceID string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnersInit()
	for _, t := range m.runners.tokens {
		if (t.WorkspaceID == "" || t.WorkspaceID == workspaceID) && m.liveToken(t) {
			return true, nil
		}
	}
	return false, nil
}

func (m *Store) SetSiteLocations(ctx context.Context, siteID string, locations []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnersInit()
	if _, ok := m.sites[siteID]; !ok {
		return store.NotFound("site")
	}
	if len(locations) == 0 {
		delete(m.runners.locations, siteID)
		return nil
	}
	m.runners.locations[siteID] = slices.Clone(locations)
	return nil
}

func (m *Store) SiteLocations(ctx context.Context, siteID string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnersInit()
	if _, ok := m.sites[siteID]; !ok {
		return nil, store.NotFound("site")
	}
	return slices.Clone(m.runners.locations[siteID]), nil
}

func (m *Store) EnqueueRunnerAudit(ctx context.Context, a store.RunnerAudit) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnersInit()
	if _, ok := m.runners.audits[a.ID]; ok {
		return store.ErrConflict
	}
	a.State, a.CreatedAt = store.RunnerQueued, a.CreatedAt.UTC()
	a.Locations = slices.Clone(a.Locations)
	m.runners.audits[a.ID] = a
	return nil
}

func (m *Store) LeaseRunnerAudit(ctx context.Context, t store.RunnerToken, runner, location string, now, until time.Time) (store.RunnerAudit, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnersInit()
	if !m.liveToken(m.runners.tokens[t.ID]) {
		return store.RunnerAudit{}, store.NotFound("runner token")
	}
	key := store.RunnerKey(t.ID, runner)
	var best *store.RunnerAudit
	for _, a := range m.runners.audits {
		leasable := a.State == store.RunnerQueued || a.State == store.RunnerLeased && a.LeaseUntil.Before(now)
		if !leasable || !t.Operator() && a.WorkspaceID != t.WorkspaceID {
			continue
		}
		if len(a.Locations) > 0 && !slices.Contains(a.Locations, location) {
			continue
		}
		if a.Avoid == key && !a.CreatedAt.Add(store.AvoidGrace).Before(now) {
			continue
		}
		if best == nil || a.CreatedAt.Before(best.CreatedAt) || a.CreatedAt.Equal(best.CreatedAt) && a.ID < best.ID {
			c := a
			best = &c
		}
	}
	if best == nil {
		return store.RunnerAudit{}, store.NotFound("runner audit")
	}
	lease := store.NewID()
	best.State, best.LeaseID, best.TokenID, best.Runner, best.Location, best.LeaseUntil = store.RunnerLeased, lease, t.ID, key, location, until.UTC()
	m.runners.audits[best.ID] = *best
	return *best, nil
}

// held finds the audit t holds under leaseID with its lease running at now.
func (m *Store) held(t store.RunnerToken, leaseID string, now time.Time) (store.RunnerAudit, error) {
	gone := fmt.Errorf("runner lease: %w", store.ErrGone)
	if leaseID == "" || !m.liveToken(m.runners.tokens[t.ID]) {
		return store.RunnerAudit{}, gone
	}
	for _, a := range m.runners.audits {
		if a.LeaseID == leaseID && a.TokenID == t.ID && a.State == store.RunnerLeased && !a.LeaseUntil.Before(now) {
			return a, nil
		}
	}
	return store.RunnerAudit{}, gone
}

func (m *Store) ExtendRunnerLease(ctx context.Context, t store.RunnerToken, leaseID string, now, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnersInit()
	a, err := m.held(t, leaseID, now)
	if err != nil {
		return err
	}
	a.LeaseUntil = until.UTC()
	m.runners.audits[a.ID] = a
	return nil
}

func (m *Store) FinishRunnerAudit(ctx context.Context, t store.RunnerToken, leaseID string, f store.RunnerFinish, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnersInit()
	a, err := m.held(t, leaseID, now)
	if err != nil {
		return err
	}
	a.State, a.Report, a.Error, a.Benchmark = store.RunnerDone, slices.Clone(f.Report), f.Error, f.Benchmark
	if f.Error != "" {
		a.State, a.Report = store.RunnerFailed, nil
	}
	a.LeaseID = ""
	m.runners.audits[a.ID] = a
	return nil
}

func (m *Store) RunnerAudit(ctx context.Context, id string) (store.RunnerAudit, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnersInit()
	a, ok := m.runners.audits[id]
	if !ok {
		return store.RunnerAudit{}, store.NotFound("runner audit")
	}
	a.Report, a.Locations = slices.Clone(a.Report), slices.Clone(a.Locations)
	return a, nil
}

func (m *Store) DeleteRunnerAudit(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnersInit()
	delete(m.runners.audits, id)
	return nil
}

func (m *Store) ForgetRunnerAudits(ctx context.Context, scanID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnersInit()
	for id, a := range m.runners.audits {
		if a.ScanID == scanID {
			delete(m.runners.audits, id)
		}
	}
	return nil
}
