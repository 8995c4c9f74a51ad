package mcp

import (
	"context"
	"errors"
	"sync"
	"time"

	"sitepulse/store"
)

// This file holds the site-level tools: list_sites, get_latest_scan, get_trend.

func iso(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

type siteItem struct {
	ID            string        `json:"id"`
	Name          string        `json:"name"`
	Domain        string        `json:"domain"`
	HealthScore   *int          `json:"healthScore"`
	LastPublished *string       `json:"lastPublished"`
	Founding      bool          `json:"founding"`
	Workspace     workspaceItem `json:"workspace"`
}

// workspaceItem names the workspace a site belongs to.
type workspaceItem struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type siteList struct {
	Sites []siteItem `json:"sites"`
	Count int        `json:"count"`
	// NextCursor is set when more sites follow: list_sites's cursor for them.
	NextCursor string `json:"nextCursor,omitempty"`
}

// sitesPerList is how many sites one list_sites answer holds: a team's whole list (the caps were
// 50 sites a workspace), a page of a workspace of 2,000 (issue 46).
const sitesPerList = 100

// listSites answers the sites of every workspace the user belongs to (an API key's: of its
// workspace only) by name, sitesPerList at a time after the cursor, those whose name holds the
// query only. A cursor that names no site of the user's reads as the first page.
func (s *Server) listSites(ctx context.Context, userID string, a args) (siteList, error) {
	q := store.ListingQuery{Search: a.str("query", ""), After: store.CanonicalID(a.str("cursor", "")), Limit: sitesPerList}
	if ws := store.PrincipalFrom(ctx).KeyWorkspaceID; ws != "" {
		q.Workspaces = []string{ws}
	} else {
		q.AllWorkspaces = true
	}
	page, err := s.sites.SiteListingsPage(ctx, userID, q)
	if err != nil {
		return siteList{}, err
	}
	sites := page.Sites
	out := make([]siteItem, 0, len(sites))
	for _, st := range sites {
		out = append(out, siteItem{ID: st.ID, Name: st.Name, Domain: st.Domain, HealthScore: st.HealthScore,
			LastPublished: iso(st.LastPublished), Founding: st.Founding,
			Workspace: workspaceItem{ID: st.WorkspaceID, Name: st.WorkspaceName}})
	}
	return siteList{Sites: out, Count: len(out), NextCursor: page.Next}, nil
}

// completedScans lists a site's completed scans, newest first, at most limit. CompletedScans
// checks the site is the user's itself: no separate read of the site.
func (s *Server) completedScans(ctx context.Context, userID, siteID string, limit int) ([]store.Scan, error) {
	scans, err := s.sites.CompletedScans(ctx, userID, siteID, limit)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errSiteNotFound
	}
	return scans, err
}

// scan reads a scan of the user, mapping "not found" to the tool error.
func (s *Server) scan(ctx context.Context, userID, scanID string) (store.Scan, error) {
	sc, err := s.scans.Scan(ctx, userID, scanID)
	if errors.Is(err, store.ErrNotFound) {
		return sc, errScanNotFound
	}
	return sc, err
}

type latestScan struct {
	ScanID      string           `json:"scanId"`
	SiteName    string           `json:"siteName"`
	Domain      string           `json:"domain"`
	CompletedAt *string          `json:"completedAt"`
	PagesTotal  int              `json:"pagesTotal"`
	Strategy    store.Strategy   `json:"strategy"`
	Scores      store.ScanScores `json:"scores"`
	Budget      map[string]any   `json:"budget"`
	// enc is this payload's encoding when it was kept (latestAnswers), nil otherwise.
	enc []byte
	// results are the encoded results of the calls that answered this kept payload, per era.
	results *keptResults
}

// encoded is the payload's encoding when it was kept: result takes it as it is.
func (l latestScan) encoded() []byte { return l.enc }

func (l latestScan) keptResults() *keptResults { return l.results }

// budgetObject is the interface's budget threshold map (metric -> threshold) with one more key,
// strategy: metric -> the strategy its budget applies to (mobile, desktop or both). It is left
// out when the site has no budgets, so an empty budget stays {}.
func budgetObject(budgets map[string]store.Budget) map[string]any {
	out := make(map[string]any, len(budgets)+1)
	strategies := make(map[string]store.Strategy, len(budgets))
	for m, b := range budgets {
		out[m], strategies[m] = b.Threshold, b.Strategy
	}
	if len(budgets) > 0 {
		out["strategy"] = strategies
	}
	return out
}

// getLatestScan reads what a budget check reads (store.BudgetInputs: the site, its latest
// completed scan and budgets, kept per process on Postgres and checked by one lookup).
func (s *Server) getLatestScan(ctx context.Context, userID string, a args) (latestScan, error) {
	in, err := s.sites.BudgetInputs(ctx, userID, store.CanonicalID(a.str("siteId", "")))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return latestScan{}, errSiteNotFound
	case err != nil:
		return latestScan{}, err
	case in.Scan == nil:
		return latestScan{}, errNoScanYet
	}
	siteID := store.CanonicalID(a.str("siteId", ""))
	if l, ok := s.latest.get(siteID, in.Version); ok {
		return l, nil
	}
	l := latestScanOf(in, *in.Scan)
	if in.Version != 0 {
		if b, err := marshal(l); err == nil {
			l.enc, l.results = b, &keptResults{}
			s.latest.put(siteID, in.Version, l)
		}
	}
	return l, nil
}

// latestAnswers keeps, per site, get_latest_scan's payload and its encoding at the site's
// budget version (store.BudgetInputs.Version): the payload is made of the inputs only, and the
// version moves with every write to them (the site's name and domain, its budgets and its
// latest completed scan), read in the statement that checks the caller may read the site. So
// a kept payload is served only after that check and never stale, and a call skips building
// and encoding it (a profile under load: 6.5% of the process's CPU). Version 0 (a store that
// keeps no versions) is never kept. Bounded by entries; it starts over when full.
type latestAnswers struct {
	mu      sync.Mutex
	entries map[string]latestAnswer
}

type latestAnswer struct {
	version int64
	scan    latestScan
}

// maxLatestAnswers bounds the payloads kept: about a kilobyte each.
const maxLatestAnswers = 10_000

func (c *latestAnswers) get(siteID string, version int64) (latestScan, bool) {
	if version == 0 {
		return latestScan{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[siteID]
	return e.scan, ok && e.version == version
}

func (c *latestAnswers) put(siteID string, version int64, l latestScan) {
	if version == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[siteID]; ok && old.version > version {
		return // a concurrent call kept a newer payload
	}
	if c.entries == nil || len(c.entries) >= maxLatestAnswers {
		c.entries = map[string]latestAnswer{}
	}
	c.entries[siteID] = latestAnswer{version: version, scan: l}
}

// latestScanOf is get_latest_scan's payload of a completed scan of the site in.
func latestScanOf(in store.BudgetInputs, sc store.Scan) latestScan {
	return latestScan{ScanID: sc.ID, SiteName: in.SiteName, Domain: in.SiteDomain, CompletedAt: iso(sc.CompletedAt),
		PagesTotal: sc.PageCount(), Strategy: sc.Strategy, Scores: sc.Scores, Budget: budgetObject(in.Budgets)}
}

type trendItem struct {
	ScanID        string  `json:"scanId"`
	CompletedAt   *string `json:"completedAt"`
	Performance   *int    `json:"performance"`
	SEO           *int    `json:"seo"`
	Accessibility *int    `json:"accessibility"`
	BestPractices *int    `json:"bestPractices"`
	PagesTotal    int     `json:"pagesTotal"`
}

// trendCore is get_trend as the interface's 2025-03-26 payload has it.
type trendCore struct {
	Scans []trendItem `json:"scans"`
	Count int         `json:"count"`
}

type trendResult struct {
	trendCore
	// Publishes are the site's publishes since the first scan of the trend (at most
	// trendPublishes, the latest), oldest first: the trend view marks them on the chart as the
	// site page does. From 2025-06-18 on.
	Publishes []trendPublish `json:"publishes"`
}

type trendPublish struct {
	PublishedAt string  `json:"publishedAt"`
	PublishedBy *string `json:"publishedBy"`
	ScanID      *string `json:"scanId"` // the scan the publish started; null when none did
}

// trendPublishes is how many publishes a trend carries, the latest (the site page's chart marks as many).
const trendPublishes = 50

// legacy leaves out the publishes, which came after 2025-03-26.
func (t trendResult) legacy() any { return t.trendCore }

func (s *Server) getTrend(ctx context.Context, userID string, a args) (trendResult, error) {
	scans, err := s.completedScans(ctx, userID, a.str("siteId", ""), a.integer("limit", 20))
	if err != nil {
		return trendResult{}, err
	}
	out := make([]trendItem, len(scans))
	for i, sc := range scans { // newest first from the store; the trend reads oldest first
		out[len(scans)-1-i] = trendItem{ScanID: sc.ID, CompletedAt: iso(sc.CompletedAt), Performance: sc.Scores.Performance,
			SEO: sc.Scores.SEO, Accessibility: sc.Scores.Accessibility, BestPractices: sc.Scores.BestPractices, PagesTotal: sc.PageCount()}
	}
	t := trendResult{trendCore: trendCore{out, len(out)}, Publishes: []trendPublish{}}
	if len(scans) == 0 || !typed(ctx) {
		return t, nil
	}
	pubs, err := s.sites.Publishes(ctx, userID, scans[0].SiteID, *scans[len(scans)-1].CompletedAt, trendPublishes)
	if err != nil {
		return trendResult{}, err
	}
	for _, p := range pubs {
		tp := trendPublish{PublishedAt: *iso(&p.PublishedOn)}
		if p.PublishedBy != "" {
			by := p.PublishedBy
			tp.PublishedBy = &by
		}
		if p.ScanID != "" {
			id := p.ScanID
			tp.ScanID = &id
		}
		t.Publishes = append(t.Publishes, tp)
	}
	return t, nil
}
