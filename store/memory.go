package store

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Memory is the in-memory Store. One mutex guards everything: it is meant for a laptop and for
// tests, and its answers must equal Postgres's (the contract suite checks that).
type Memory struct {
	mu         sync.Mutex
	users      map[string]User
	sessions   map[string]Session
	apiKeys    map[string]APIKey
	revoked    map[string]bool // api key ids
	sites      map[string]Site
	budgets    map[string]map[string]float64
	rules      map[string]AlertRule
	scans      map[string]Scan
	results    map[string]map[PageKey]memResult
	jobs       map[int64]Job
	nextJob    int64
	clients    map[string]OAuthClient
	requests   map[string]AuthRequest
	codes      map[string]AuthCode
	tokens     map[string]OAuthToken
	consents   map[[2]string]Consent
	reports    map[string]Report
	deliveries map[string]time.Time
}

type memResult struct {
	result *PageResult
	err    PageError
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{
		users:      map[string]User{},
		sessions:   map[string]Session{},
		apiKeys:    map[string]APIKey{},
		revoked:    map[string]bool{},
		sites:      map[string]Site{},
		budgets:    map[string]map[string]float64{},
		rules:      map[string]AlertRule{},
		scans:      map[string]Scan{},
		results:    map[string]map[PageKey]memResult{},
		jobs:       map[int64]Job{},
		clients:    map[string]OAuthClient{},
		requests:   map[string]AuthRequest{},
		codes:      map[string]AuthCode{},
		tokens:     map[string]OAuthToken{},
		consents:   map[[2]string]Consent{},
		reports:    map[string]Report{},
		deliveries: map[string]time.Time{},
	}
}

func (m *Memory) Ping(ctx context.Context) error { return ctx.Err() }
func (m *Memory) Close() error                   { return nil }

func notFound(what string) error { return fmt.Errorf("%s: %w", what, ErrNotFound) }

func tp(t time.Time) *time.Time { t = Now(t); return &t }

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// ---- users, sessions, keys

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
	s.CreatedAt, s.ExpiresAt = Now(s.CreatedAt), Now(s.ExpiresAt)
	m.sessions[s.TokenHash] = s
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

// ---- sites

func cloneSite(s Site) Site {
	s.Pages = slices.Clone(s.Pages)
	if s.Pages == nil {
		s.Pages = []string{}
	}
	if s.HealthScore != nil {
		h := *s.HealthScore
		s.HealthScore = &h
	}
	s.LastPublished = cloneTime(s.LastPublished)
	return s
}

func (m *Memory) platformTaken(platformID, exceptSite string) bool {
	if platformID == "" {
		return false
	}
	for _, o := range m.sites {
		if o.PlatformSiteID == platformID && o.ID != exceptSite {
			return true
		}
	}
	return false
}

func (m *Memory) CreateSite(ctx context.Context, s Site) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[s.UserID]; !ok {
		return notFound("user")
	}
	if m.platformTaken(s.PlatformSiteID, "") {
		return fmt.Errorf("platform site id %q: %w", s.PlatformSiteID, ErrConflict)
	}
	s.CreatedAt = Now(s.CreatedAt)
	if s.LastPublished != nil {
		s.LastPublished = tp(*s.LastPublished)
	}
	m.sites[s.ID] = cloneSite(s)
	return nil
}

func (m *Memory) UpdateSite(ctx context.Context, s Site) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.sites[s.ID]
	if !ok || old.UserID != s.UserID {
		return notFound("site")
	}
	if m.platformTaken(s.PlatformSiteID, s.ID) {
		return fmt.Errorf("platform site id %q: %w", s.PlatformSiteID, ErrConflict)
	}
	old.Name, old.Domain, old.PlatformSiteID, old.Founding = s.Name, s.Domain, s.PlatformSiteID, s.Founding
	old.Pages = slices.Clone(s.Pages)
	m.sites[s.ID] = cloneSite(old)
	return nil
}

func (m *Memory) DeleteSite(ctx context.Context, userID, siteID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sites[siteID]
	if !ok || s.UserID != userID {
		return notFound("site")
	}
	delete(m.sites, siteID)
	delete(m.budgets, siteID)
	for id, r := range m.rules {
		if r.SiteID == siteID {
			delete(m.rules, id)
		}
	}
	for id, sc := range m.scans {
		if sc.SiteID != siteID {
			continue
		}
		delete(m.scans, id)
		delete(m.results, id)
		for jid, j := range m.jobs {
			if j.ScanID == id {
				delete(m.jobs, jid)
			}
		}
		for rid, r := range m.reports {
			if r.ScanID == id {
				delete(m.reports, rid)
			}
		}
	}
	return nil
}

func (m *Memory) ownedSite(userID, siteID string) (Site, bool) {
	s, ok := m.sites[siteID]
	if !ok || s.UserID != userID {
		return Site{}, false
	}
	return s, true
}

func (m *Memory) Site(ctx context.Context, userID, siteID string) (Site, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.ownedSite(userID, siteID)
	if !ok {
		return Site{}, notFound("site")
	}
	return cloneSite(s), nil
}

func (m *Memory) SitesOf(ctx context.Context, userID string) ([]Site, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Site{}
	for _, s := range m.sites {
		if s.UserID == userID {
			out = append(out, cloneSite(s))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func (m *Memory) SiteByPlatformID(ctx context.Context, platformSiteID string) (Site, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if platformSiteID == "" {
		return Site{}, notFound("site")
	}
	for _, s := range m.sites {
		if s.PlatformSiteID == platformSiteID {
			return cloneSite(s), nil
		}
	}
	return Site{}, notFound("site")
}

func (m *Memory) MarkPublished(ctx context.Context, siteID string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sites[siteID]
	if !ok {
		return notFound("site")
	}
	s.LastPublished = tp(at)
	m.sites[siteID] = s
	return nil
}

func (m *Memory) Budgets(ctx context.Context, userID, siteID string) (map[string]float64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedSite(userID, siteID); !ok {
		return nil, notFound("site")
	}
	return m.siteBudgets(siteID), nil
}

// siteBudgets copies a site's budgets; the caller holds m.mu.
func (m *Memory) siteBudgets(siteID string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m.budgets[siteID] {
		out[k] = v
	}
	return out
}

func (m *Memory) SetBudgets(ctx context.Context, userID, siteID string, budgets map[string]float64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedSite(userID, siteID); !ok {
		return notFound("site")
	}
	b := map[string]float64{}
	for k, v := range budgets {
		b[k] = v
	}
	m.budgets[siteID] = b
	return nil
}

func (m *Memory) AlertRules(ctx context.Context, userID, siteID string) ([]AlertRule, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedSite(userID, siteID); !ok {
		return nil, notFound("site")
	}
	return m.siteRules(siteID), nil
}

// siteRules lists a site's alert rules in order; the caller holds m.mu.
func (m *Memory) siteRules(siteID string) []AlertRule {
	out := []AlertRule{}
	for _, r := range m.rules {
		if r.SiteID == siteID {
			out = append(out, r)
		}
	}
	sortRules(out)
	return out
}

// sortRules orders alert rules as both stores list them: by creation, then id.
func sortRules(out []AlertRule) {
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
}

func (m *Memory) AddAlertRule(ctx context.Context, userID string, r AlertRule) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedSite(userID, r.SiteID); !ok {
		return notFound("site")
	}
	r.CreatedAt = Now(r.CreatedAt)
	m.rules[r.ID] = r
	return nil
}

func (m *Memory) UpdateAlertRule(ctx context.Context, userID string, r AlertRule) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.rules[r.ID]
	if _, owned := m.ownedSite(userID, r.SiteID); !ok || !owned || old.SiteID != r.SiteID {
		return notFound("alert rule")
	}
	old.Metric, old.Operator, old.Threshold = r.Metric, r.Operator, r.Threshold
	m.rules[r.ID] = old
	return nil
}

func (m *Memory) DeleteAlertRule(ctx context.Context, userID, siteID, ruleID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rules[ruleID]
	if _, owned := m.ownedSite(userID, siteID); !ok || !owned || r.SiteID != siteID {
		return notFound("alert rule")
	}
	delete(m.rules, ruleID)
	return nil
}

// ---- scans

func cloneScan(s Scan) Scan {
	s.StartedAt, s.CompletedAt = cloneTime(s.StartedAt), cloneTime(s.CompletedAt)
	s.Scores = cloneScores(s.Scores)
	return s
}

func cloneScores(s ScanScores) ScanScores {
	c := func(p *int) *int {
		if p == nil {
			return nil
		}
		v := *p
		return &v
	}
	return ScanScores{c(s.Health), c(s.Performance), c(s.SEO), c(s.Accessibility), c(s.BestPractices)}
}

// ownedScan finds a scan whose site belongs to userID.
func (m *Memory) ownedScan(userID, scanID string) (Scan, bool) {
	s, ok := m.scans[scanID]
	if !ok {
		return Scan{}, false
	}
	if _, owned := m.ownedSite(userID, s.SiteID); !owned {
		return Scan{}, false
	}
	return s, true
}

func (m *Memory) Scan(ctx context.Context, userID, scanID string) (Scan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.ownedScan(userID, scanID)
	if !ok {
		return Scan{}, notFound("scan")
	}
	return cloneScan(s), nil
}

func (m *Memory) ScanWait(ctx context.Context, userID, scanID string) (ScanWait, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedScan(userID, scanID); !ok {
		return ScanWait{}, nil
	}
	for _, j := range m.jobs {
		if j.ScanID == scanID && j.State == JobAvailable && j.LastError != "" {
			return ScanWait{Reason: j.LastError, RunAt: j.RunAt}, nil
		}
	}
	return ScanWait{}, nil
}

func (m *Memory) ScansOf(ctx context.Context, userID, siteID string, limit int) ([]Scan, error) {
	return m.scansOf(userID, siteID, limit, false)
}

func (m *Memory) LastScans(ctx context.Context, userID string) (map[string]Scan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]Scan{}
	for _, sc := range m.scans {
		if site, ok := m.sites[sc.SiteID]; !ok || site.UserID != userID {
			continue
		}
		last, ok := out[sc.SiteID]
		if !ok || sc.CreatedAt.After(last.CreatedAt) || sc.CreatedAt.Equal(last.CreatedAt) && sc.ID > last.ID {
			out[sc.SiteID] = cloneScan(sc)
		}
	}
	return out, nil
}

func (m *Memory) CompletedScans(ctx context.Context, userID, siteID string, limit int) ([]Scan, error) {
	return m.scansOf(userID, siteID, limit, true)
}

func (m *Memory) LatestCompletedScan(ctx context.Context, userID, siteID string) (Scan, error) {
	scans, err := m.scansOf(userID, siteID, 1, true)
	if err != nil {
		return Scan{}, err
	}
	if len(scans) == 0 {
		return Scan{}, notFound("completed scan")
	}
	return scans[0], nil
}

func (m *Memory) scansOf(userID, siteID string, limit int, completed bool) ([]Scan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedSite(userID, siteID); !ok {
		return nil, notFound("site")
	}
	return m.siteScans(siteID, limit, completed), nil
}

// siteScans lists a site's scans, or its complete ones, newest first, at most limit; the caller
// holds m.mu.
func (m *Memory) siteScans(siteID string, limit int, completed bool) []Scan {
	out := []Scan{}
	for _, s := range m.scans {
		if s.SiteID == siteID && (!completed || s.Status == StatusComplete) {
			out = append(out, cloneScan(s))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].CreatedAt, out[j].CreatedAt
		if completed {
			a, b = *out[i].CompletedAt, *out[j].CompletedAt
		}
		if !a.Equal(b) {
			return a.After(b)
		}
		return out[i].ID > out[j].ID
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// sortedResults returns a scan's rows ordered by path then strategy.
func (m *Memory) sortedResults(scanID string) []memResult {
	rows := make([]memResult, 0, len(m.results[scanID]))
	for _, r := range m.results[scanID] {
		rows = append(rows, r)
	}
	key := func(r memResult) (string, string) {
		if r.result != nil {
			return r.result.PagePath, r.result.Strategy
		}
		return r.err.PagePath, r.err.Strategy
	}
	sort.Slice(rows, func(i, j int) bool {
		pi, si := key(rows[i])
		pj, sj := key(rows[j])
		if pi != pj {
			return pi < pj
		}
		return si < sj
	})
	return rows
}

func (m *Memory) PageResults(ctx context.Context, userID, scanID string) ([]PageResult, error) {
	out := []PageResult{}
	err := m.EachPageResult(ctx, userID, scanID, func(r PageResult) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

func (m *Memory) EachPageResult(ctx context.Context, userID, scanID string, fn func(PageResult) error) error {
	m.mu.Lock()
	if _, ok := m.ownedScan(userID, scanID); !ok {
		m.mu.Unlock()
		return notFound("scan")
	}
	var results []PageResult
	for _, r := range m.sortedResults(scanID) {
		if r.result != nil {
			results = append(results, clonePageResult(*r.result))
		}
	}
	m.mu.Unlock()
	for _, r := range results {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (m *Memory) PageResult(ctx context.Context, userID, scanID, pagePath, strategy string) (PageResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedScan(userID, scanID); !ok {
		return PageResult{}, notFound("scan")
	}
	r, ok := m.results[scanID][PageKey{pagePath, strategy}]
	if !ok || r.result == nil {
		return PageResult{}, notFound("page result")
	}
	return clonePageResult(*r.result), nil
}

func (m *Memory) PageErrors(ctx context.Context, userID, scanID string) ([]PageError, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedScan(userID, scanID); !ok {
		return nil, notFound("scan")
	}
	out := []PageError{}
	for _, r := range m.sortedResults(scanID) {
		if r.result == nil {
			out = append(out, r.err)
		}
	}
	return out, nil
}

// clonePageResult deep-copies a result through its stored form, as Postgres's jsonb does.
func clonePageResult(r PageResult) PageResult {
	c, err := decodeResult(encodeResult(r))
	if err != nil {
		panic(err) // a PageResult always round-trips
	}
	c.ScanID = r.ScanID
	return c
}

// ---- queue

func (m *Memory) EnqueueScan(ctx context.Context, s Scan, queue string, runAt time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sites[s.SiteID]; !ok {
		return notFound("site")
	}
	for _, o := range m.scans {
		if o.SiteID == s.SiteID && (o.Status == StatusQueued || o.Status == StatusRunning) {
			return fmt.Errorf("site %s: %w", s.SiteID, ErrScanActive)
		}
	}
	s.Status = StatusQueued
	s.CreatedAt = Now(s.CreatedAt)
	s.StartedAt, s.CompletedAt = nil, nil
	m.scans[s.ID] = cloneScan(s)
	m.nextJob++
	m.jobs[m.nextJob] = Job{
		ID: m.nextJob, Queue: queue, ScanID: s.ID, State: JobAvailable,
		MaxAttempts: MaxAttempts, RunAt: Now(runAt), CreatedAt: s.CreatedAt,
	}
	return nil
}

func (m *Memory) ClaimJob(ctx context.Context, queue, workerID string, now time.Time) (Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best *Job
	for _, j := range m.jobs {
		if j.Queue != queue || j.State != JobAvailable || j.RunAt.After(now) {
			continue
		}
		if best == nil || j.RunAt.Before(best.RunAt) || j.RunAt.Equal(best.RunAt) && j.ID < best.ID {
			j := j
			best = &j
		}
	}
	if best == nil {
		return Job{}, notFound("runnable job")
	}
	j := *best
	j.State, j.Attempt, j.HeartbeatAt, j.LockedBy = JobRunning, j.Attempt+1, tp(now), workerID
	m.jobs[j.ID] = j
	j.HeartbeatAt = cloneTime(j.HeartbeatAt)
	return j, nil
}

// leased returns the job of a lease when it is still running under that attempt.
func (m *Memory) leased(l Lease) (Job, error) {
	j, ok := m.jobs[l.JobID]
	if !ok || j.State != JobRunning || j.Attempt != l.Attempt {
		return Job{}, fmt.Errorf("job %d attempt %d: %w", l.JobID, l.Attempt, ErrLeaseLost)
	}
	return j, nil
}

func (m *Memory) Heartbeat(ctx context.Context, l Lease, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, err := m.leased(l)
	if err != nil {
		return err
	}
	j.HeartbeatAt = tp(now)
	m.jobs[j.ID] = j
	return nil
}

func (m *Memory) ScanForJob(ctx context.Context, scanID string) (Scan, Site, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.scans[scanID]
	if !ok {
		return Scan{}, Site{}, notFound("scan")
	}
	site, ok := m.sites[s.SiteID]
	if !ok {
		return Scan{}, Site{}, notFound("site")
	}
	return cloneScan(s), cloneSite(site), nil
}

func (m *Memory) StartScan(ctx context.Context, l Lease, pagesTotal int, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.leased(l); err != nil {
		return err
	}
	s, ok := m.scans[l.ScanID]
	if !ok {
		return notFound("scan")
	}
	s.Status, s.PagesTotal = StatusRunning, pagesTotal
	if s.StartedAt == nil {
		s.StartedAt = tp(now)
	}
	m.scans[s.ID] = s
	return nil
}

func (m *Memory) DonePages(ctx context.Context, scanID string) ([]PageKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []PageKey{}
	for k := range m.results[scanID] {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].PagePath != out[j].PagePath {
			return out[i].PagePath < out[j].PagePath
		}
		return out[i].Strategy < out[j].Strategy
	})
	return out, nil
}

func (m *Memory) SavePageResult(ctx context.Context, l Lease, r PageResult) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.leased(l); err != nil {
		return err
	}
	r.ScanID = l.ScanID
	c := clonePageResult(r)
	m.putResult(l.ScanID, PageKey{r.PagePath, r.Strategy}, memResult{result: &c})
	return nil
}

func (m *Memory) SavePageError(ctx context.Context, l Lease, e PageError) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.leased(l); err != nil {
		return err
	}
	k := PageKey{e.PagePath, e.Strategy}
	if old, ok := m.results[l.ScanID][k]; ok && old.result != nil {
		return nil // a result is never replaced by an error
	}
	e.ScanID = l.ScanID
	m.putResult(l.ScanID, k, memResult{err: e})
	return nil
}

func (m *Memory) putResult(scanID string, k PageKey, r memResult) {
	if m.results[scanID] == nil {
		m.results[scanID] = map[PageKey]memResult{}
	}
	m.results[scanID][k] = r
	s := m.scans[scanID]
	s.PagesDone = len(m.results[scanID])
	m.scans[scanID] = s
}

func (m *Memory) CompleteScan(ctx context.Context, l Lease, scores ScanScores, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, err := m.leased(l)
	if err != nil {
		return err
	}
	j.State = JobCompleted
	m.jobs[j.ID] = j
	s := m.scans[l.ScanID]
	s.Status, s.Scores, s.CompletedAt, s.Error = StatusComplete, cloneScores(scores), tp(now), ""
	m.scans[s.ID] = s
	if site, ok := m.sites[s.SiteID]; ok {
		site.HealthScore = cloneScores(scores).Health
		m.sites[site.ID] = site
	}
	return nil
}

func (m *Memory) FailScan(ctx context.Context, l Lease, reason string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, err := m.leased(l)
	if err != nil {
		return err
	}
	m.discard(j, reason, now)
	return nil
}

func (m *Memory) discard(j Job, reason string, now time.Time) {
	j.State, j.LastError = JobDiscarded, reason
	m.jobs[j.ID] = j
	s := m.scans[j.ScanID]
	s.Status, s.Error, s.CompletedAt = StatusFailed, reason, tp(now)
	m.scans[s.ID] = s
}

func (m *Memory) RetryJob(ctx context.Context, l Lease, runAt time.Time, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, err := m.leased(l)
	if err != nil {
		return err
	}
	j.State, j.RunAt, j.LastError, j.LockedBy = JobAvailable, Now(runAt), reason, ""
	m.jobs[j.ID] = j
	return nil
}

func (m *Memory) SnoozeJob(ctx context.Context, l Lease, runAt time.Time, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, err := m.leased(l)
	if err != nil {
		return err
	}
	j.State, j.RunAt, j.LastError, j.LockedBy = JobAvailable, Now(runAt), reason, ""
	j.MaxAttempts++
	m.jobs[j.ID] = j
	return nil
}

func (m *Memory) RescueJobs(ctx context.Context, staleBefore, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, j := range m.jobs {
		if j.State != JobRunning || j.HeartbeatAt == nil || !j.HeartbeatAt.Before(staleBefore) {
			continue
		}
		n++
		if j.Attempt >= j.MaxAttempts {
			m.discard(j, RescueGiveUp, now)
			continue
		}
		// run_at is kept: the job goes back to its place in the queue, ahead of later ones.
		j.State, j.LastError, j.LockedBy = JobAvailable, RescueReason, ""
		m.jobs[j.ID] = j
	}
	return n, nil
}

func (m *Memory) Job(ctx context.Context, id int64) (Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return Job{}, notFound("job")
	}
	j.HeartbeatAt = cloneTime(j.HeartbeatAt)
	return j, nil
}

// ---- OAuth

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
	m.requests[r.IDHash] = r
	return nil
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

// ---- reports

func cloneReport(r Report) Report {
	r.ExpiresAt, r.RevokedAt = cloneTime(r.ExpiresAt), cloneTime(r.RevokedAt)
	return r
}

func (m *Memory) CreateReport(ctx context.Context, r Report) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedScan(r.UserID, r.ScanID); !ok {
		return notFound("scan")
	}
	r.CreatedAt = Now(r.CreatedAt)
	if r.ExpiresAt != nil {
		r.ExpiresAt = tp(*r.ExpiresAt)
	}
	r.RevokedAt = nil
	r.SiteID = m.scans[r.ScanID].SiteID
	m.reports[r.ID] = cloneReport(r)
	return nil
}

func (m *Memory) ReportByHash(ctx context.Context, tokenHash string) (Report, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.reports {
		if r.TokenHash == tokenHash {
			return cloneReport(r), nil
		}
	}
	return Report{}, notFound("report")
}

func (m *Memory) ReportsOf(ctx context.Context, userID string) ([]Report, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Report{}
	for _, r := range m.reports {
		if r.UserID == userID {
			out = append(out, cloneReport(r))
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

func (m *Memory) RevokeReport(ctx context.Context, userID, reportID string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.reports[reportID]
	if !ok || r.UserID != userID {
		return notFound("report")
	}
	if r.RevokedAt == nil {
		r.RevokedAt = tp(now)
		m.reports[reportID] = r
	}
	return nil
}

func (m *Memory) ReportScan(ctx context.Context, r Report) (Scan, Site, []PageResult, error) {
	m.mu.Lock()
	s, ok := m.scans[r.ScanID]
	site, siteOK := m.sites[s.SiteID]
	m.mu.Unlock()
	if !ok || !siteOK || site.UserID != r.UserID {
		return Scan{}, Site{}, nil, notFound("scan")
	}
	results, err := m.PageResults(ctx, r.UserID, r.ScanID)
	if err != nil {
		return Scan{}, Site{}, nil, err
	}
	return cloneScan(s), cloneSite(site), results, nil
}

// ---- webhooks

func (m *Memory) SeenDelivery(ctx context.Context, bodyHash string, since, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if last, ok := m.deliveries[bodyHash]; ok && last.After(since) {
		return true, nil
	}
	m.deliveries[bodyHash] = Now(now)
	return false, nil
}
