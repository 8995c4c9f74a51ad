package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"sitepulse/store"
)

// The reads of store.Reads, made of the store's other reads: Postgres answers each in one
// statement, this store simply.

func (m *Store) SiteListings(ctx context.Context, userID, workspaceID string) ([]store.SiteListing, error) {
	var sites []store.Site
	var err error
	if workspaceID != "" {
		sites, err = m.SitesIn(ctx, userID, workspaceID)
	} else {
		sites, err = m.SitesOf(ctx, userID)
	}
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]store.SiteListing, len(sites))
	for i, s := range sites {
		t := m.triage[s.ID]
		t.BudgetsBroken = m.budgetsBroken[s.ID]
		t.Broken = append([]string{}, t.Broken...)
		out[i] = store.SiteListing{Site: s, WorkspaceName: m.workspaces[s.WorkspaceID].Name, Triage: t}
		for _, sc := range m.scans {
			if sc.SiteID == s.ID && (out[i].LastScan == nil || sc.CreatedAt.After(out[i].LastScan.CreatedAt) ||
				sc.CreatedAt.Equal(out[i].LastScan.CreatedAt) && sc.ID > out[i].LastScan.ID) {
				c := cloneScan(sc)
				out[i].LastScan = &c
			}
		}
	}
	return out, nil
}

func (m *Store) SiteListingsPage(ctx context.Context, userID string, q store.ListingQuery) (store.ListingPage, error) {
	var all []store.SiteListing
	if q.AllWorkspaces {
		workspaces, err := m.WorkspacesOf(ctx, userID)
		if err != nil {
			return store.ListingPage{}, err
		}
		q.Workspaces = nil
		for _, w := range workspaces {
			q.Workspaces = append(q.Workspaces, w.ID)
		}
	}
	for i, w := range q.Workspaces {
		if w == "" || slices.Contains(q.Workspaces[:i], w) {
			continue
		}
		sites, err := m.SiteListings(ctx, userID, w)
		if err != nil {
			return store.ListingPage{}, err
		}
		all = append(all, sites...)
	}
	all = slices.DeleteFunc(all, func(l store.SiteListing) bool {
		return !strings.Contains(strings.ToLower(l.Name), strings.ToLower(q.Search))
	})
	slices.SortFunc(all, func(a, b store.SiteListing) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.ID, b.ID))
	})
	if q.Limit < 1 {
		return store.ListingPage{Sites: []store.SiteListing{}}, nil
	}
	if q.After != "" { // After wins
		q.Before = ""
	}
	cursor := slices.IndexFunc(all, func(l store.SiteListing) bool { return l.ID == q.After+q.Before })
	switch {
	case cursor >= 0 && q.Before != "" && cursor > 0:
		return q.Page(all[max(0, cursor-q.Limit-1):cursor]), nil
	case cursor >= 0 && q.Before == "" && cursor+1 < len(all):
		return q.Page(all[cursor+1 : min(len(all), cursor+q.Limit+2)]), nil
	}
	// No cursor, or one that names no site of the user's (any longer), or nothing past it: the
	// first page.
	q.After, q.Before = "", ""
	return q.Page(all[:min(len(all), q.Limit+1)]), nil
}

func (m *Store) PageDetails(ctx context.Context, userID, scanID, pagePath string, strategy store.Strategy) (store.PageDetails, error) {
	sc, err := m.Scan(ctx, userID, scanID)
	if err != nil {
		return store.PageDetails{}, err
	}
	d := store.PageDetails{ScanStatus: sc.Status}
	if pagePath == "" {
		metrics, err := m.PageMetrics(ctx, userID, scanID)
		if err != nil {
			return d, err
		}
		var worst *store.PageResult
		for i, r := range metrics {
			if r.Strategy == strategy && (worst == nil || store.WorsePage(r, *worst)) {
				worst = &metrics[i]
			}
		}
		if worst == nil {
			return d, nil
		}
		pagePath = worst.PagePath
	}
	r, err := m.PageResult(ctx, userID, scanID, pagePath, strategy)
	if err != nil {
		return d, ignoreNotFound(err)
	}
	d.Found, d.Result = true, r
	return d, nil
}

func ignoreNotFound(err error) error {
	if store.Classify(err) == store.ErrNotFound {
		return nil
	}
	return err
}

func (m *Store) LatestResults(ctx context.Context, userID, siteID, knownScanID string) (store.LatestResults, error) {
	var out store.LatestResults
	scans, err := m.CompletedScans(ctx, userID, siteID, 1)
	if err != nil || len(scans) == 0 {
		return out, err
	}
	out.Scan = &scans[0]
	if scans[0].ID != knownScanID {
		out.Results, err = m.PageResults(ctx, userID, scans[0].ID)
	}
	return out, err
}

func (m *Store) LatestTwo(ctx context.Context, userID, siteID string, known []string) (store.LatestTwo, error) {
	out := store.LatestTwo{Scans: []store.Scan{}, Metrics: [][]store.PageResult{}}
	scans, err := m.CompletedScans(ctx, userID, siteID, 2)
	if err != nil {
		return out, err
	}
	for _, sc := range scans {
		var metrics []store.PageResult
		if !slices.Contains(known, sc.ID) {
			if metrics, err = m.PageMetrics(ctx, userID, sc.ID); err != nil {
				return out, err
			}
		}
		out.Scans, out.Metrics = append(out.Scans, sc), append(out.Metrics, metrics)
	}
	if len(scans) > 0 {
		pubs, err := m.PublishesOfScans(ctx, userID, []string{scans[0].ID})
		if err != nil {
			return out, err
		}
		if p, ok := pubs[scans[0].ID]; ok {
			on := p.PublishedOn
			out.PublishedBy, out.PublishedOn = p.PublishedBy, &on
		}
	}
	return out, nil
}

func (m *Store) CreateScanReport(ctx context.Context, p store.Principal, r store.Report, max int) (store.ScanReport, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out store.ScanReport
	if err := r.Validate(); err != nil {
		return out, err
	}
	sc, ok := m.ownedScan(r.UserID, r.ScanID)
	if !ok {
		return out, store.NotFound("scan")
	}
	out.ScanStatus = sc.Status
	site := m.sites[sc.SiteID]
	if err := store.Authorize(p, store.Workspace{ID: site.WorkspaceID, Role: m.role(r.UserID, site.WorkspaceID)}, store.ActReport); err != nil {
		return out, err
	}
	if sc.Status != store.StatusComplete {
		return out, store.ErrScanNotComplete
	}
	if sc.DetailsPrunedAt != nil {
		out.DetailsPrunedAt = cloneTime(sc.DetailsPrunedAt)
		return out, fmt.Errorf("report of a pruned scan: %w", store.ErrGone)
	}
	n := 0
	for _, o := range m.reports {
		if o.UserID == r.UserID && o.RevokedAt == nil && (o.ExpiresAt == nil || o.ExpiresAt.After(r.CreatedAt)) {
			n++
		}
	}
	if n >= max {
		return out, fmt.Errorf("%d active reports: %w", n, store.ErrLimit)
	}
	if r.Title == "" {
		r.Title = store.DefaultReportTitle(site.Name)
	}
	out.Title = r.Title
	return out, m.createReportLocked(r)
}

func (m *Store) ExportScan(ctx context.Context, userID, siteID, scanID string, full bool, head func(store.Site, *store.Scan) error, row func(store.PageResult, *store.PageResult) error) error {
	site, err := m.Site(ctx, userID, siteID)
	if err != nil {
		return err
	}
	var sc *store.Scan
	if scanID == "" {
		if scans, err := m.CompletedScans(ctx, userID, siteID, 1); err == nil && len(scans) > 0 {
			sc = &scans[0]
		}
	} else if s, err := m.Scan(ctx, userID, scanID); err == nil && s.SiteID == site.ID {
		sc = &s
	}
	if err := head(site, sc); err != nil || sc == nil || sc.Status != store.StatusComplete {
		return err
	}
	results, err := m.PageResults(ctx, userID, sc.ID)
	if err != nil {
		return err
	}
	var pairs map[store.PageKey]store.RunPair
	if full {
		pp, err := m.PreviousPairs(ctx, userID, sc.ID)
		if err != nil {
			return err
		}
		pairs = map[store.PageKey]store.RunPair{}
		for _, p := range pp.Pairs {
			pairs[store.PageKey{PagePath: p.After.PagePath, Strategy: p.After.Strategy}] = p
		}
	}
	for _, r := range results {
		var previous *store.PageResult
		if full {
			p, ok := pairs[store.PageKey{PagePath: r.PagePath, Strategy: r.Strategy}]
			r.Explain = p.After.Explain
			if ok {
				previous = &p.Before
			} else if r.Explain, err = m.explainOf(sc.ID, r.PagePath, r.Strategy); err != nil {
				return err
			}
		}
		if err := row(store.ExportRow(r, full), previous); err != nil {
			return err
		}
	}
	return nil
}

// explainOf decodes the Explain of a page of a scan (nil when none is kept).
func (m *Store) explainOf(scanID, pagePath string, strategy store.Strategy) (*store.Explain, error) {
	m.mu.Lock()
	b := m.results[scanID][store.PageKey{PagePath: pagePath, Strategy: strategy}].explain
	m.mu.Unlock()
	return store.DecodeExplain(b)
}

func (m *Store) ScanView(ctx context.Context, userID, scanID string) (store.ScanView, error) {
	sc, err := m.Scan(ctx, userID, scanID)
	if err != nil {
		return store.ScanView{}, err
	}
	site, err := m.Site(ctx, userID, sc.SiteID)
	if err != nil {
		return store.ScanView{}, err
	}
	budgets, err := m.Budgets(ctx, userID, sc.SiteID)
	return store.ScanView{Scan: sc, SiteName: site.Name, SiteDomain: site.Domain, Budgets: budgets}, err
}
