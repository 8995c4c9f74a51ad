package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"sitepulse/handlers/svg"
	"sitepulse/mcp"
	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// SiteStore is what the home page, the site form and the site page read and write: a workspace's
// sites, their recent scans and publishes, and Scan now.
type SiteStore interface {
	// SiteListingsPage is the sites list's one read: a page of sites with their latest scans and triage.
	SiteListingsPage(ctx context.Context, userID string, q store.ListingQuery) (store.ListingPage, error)
	WorkspacesOf(ctx context.Context, userID string) ([]store.Workspace, error)
	CreateSiteWithin(ctx context.Context, s store.Site, max int) error
	UpdateSite(ctx context.Context, s store.Site) error
	DeleteSite(ctx context.Context, userID, siteID string) error
	EnqueueScan(ctx context.Context, s store.Scan, kind string, runAt time.Time) error
	ScansOf(ctx context.Context, userID, siteID string, limit int) ([]store.Scan, error)
	// SiteAccess and SetSiteAccess read and write a site's access setting, sealed (access.go).
	SiteAccess(ctx context.Context, userID, siteID string) (store.SiteAccess, error)
	SetSiteAccess(ctx context.Context, userID string, a store.SiteAccess) error
	// SiteView is the site page's reads but the site itself, in two statements on Postgres.
	SiteView(ctx context.Context, userID, siteID string, history, completed, publishes int) (store.SiteView, error)
}

// uiFlashes are the confirmations a redirect may ask a web UI page to show; the query names one,
// so no text of an attacker's choosing ever appears on a page.
var uiFlashes = map[string]string{
	"site-added":            "Site added. Press “Scan now” to audit it; to scan it on a schedule too, choose daily or weekly scans on its edit page.",
	"site-saved":            "Site saved.",
	"site-deleted":          "Site deleted, with its scans, budgets and reports.",
	"workspace-deleted":     "Workspace deleted, with its sites, scans, reports, API keys, invitations and members.",
	"budgets-saved":         "Budgets saved.",
	"beacon-installed":      "SitePulse's script was added to this site's custom code on Webflow, in the footer of every page. It takes effect when you next publish the site on Webflow.",
	"beacon-removed":        "SitePulse's script was removed from this site's custom code on Webflow; its other scripts stay. The change takes effect when you next publish the site on Webflow.",
	"rule-added":            "Alert rule added.",
	"access-saved":          "Access setting saved: the next scan signs in before it audits. Its credentials are sealed and never shown again.",
	"access-removed":        "The site is audited signed out: its access setting is removed.",
	"rule-deleted":          "Alert rule deleted.",
	"report-revoked":        "Report revoked. Its link now answers “gone”.",
	"report-title":          "The report was not made: its title may have up to 200 characters and no invisible or control characters.",
	"report-limit":          fmt.Sprintf("The report was not made: your account already has %d active report links. Revoke some under Reports, or let them expire.", mcp.MaxActiveReports),
	"platform-disconnected": "Platform disconnected: SitePulse's webhooks were removed and its access forgotten. The sites and their scans stay here.",
}

func uiFlash(r *http.Request) string {
	q := r.URL.Query()
	if q.Get("done") == "platform-imported" { // says what the import did: the only number a flash takes
		switch n, _ := strconv.Atoi(q.Get("scans")); {
		case n <= 0:
			return "Sites imported: names, domains and pages refreshed. No scan queued: each site already has scans. Each publish on the platform scans again."
		case n == 1:
			return "Sites imported. 1 first scan queued; each publish on the platform scans again."
		default:
			return "Sites imported. " + strconv.Itoa(n) + " first scans queued; each publish on the platform scans again."
		}
	}
	return uiFlashes[q.Get("done")]
}

// homePageSize is how many sites a page of the sites list shows (issue 46: a workspace may hold
// 2,000): a page reads and renders these only.
const homePageSize = 50

// homePage is the sites list as a triage board, a page at a time: the sites (of one workspace
// with ?workspace=, whose name holds ?q=) by name, 50 a page, each page worst first, with their
// latest scans and what their latest completed scans left; the visitor's workspaces for the
// filter, the links to the pages before and after, and the platform connection's state.
type homePage struct {
	Sites      []store.SiteListing
	Workspaces []store.Workspace
	Filter     *store.Workspace // the workspace ?workspace= names; nil for every workspace
	Search     string           // ?q=, trimmed
	Prev, Next string           // the links to the pages before and after; empty when none
	Platform   platformStatus
}

// Grouped says whether the list shows workspaces: only once the visitor is in more than one.
func (h homePage) Grouped() bool { return len(h.Workspaces) > 1 }

// Paged says whether the list has more than this page, or is a search's: the search box and the
// page links show then.
func (h homePage) Paged() bool { return h.Prev != "" || h.Next != "" || h.Search != "" }

// PageSize is how many sites a page shows, for the page's note.
func (homePage) PageSize() int { return homePageSize }

// maxSearch is the longest ?q= the sites list searches by (a site's name has at most 100
// characters); a longer one is cut.
const maxSearch = 100

// handleHome lists the signed-in user's sites a page at a time (?after= or ?before= a site's ID),
// by name, each page worst first: a failing scan, confirmed regressions, broken budgets, then the
// lower health score. One read (SiteListingsPage) gives the page's sites with their latest scans
// and triage.
func (s *server) handleHome() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visitorFrom(r.Context())
		workspaces, err := s.Sites.WorkspacesOf(r.Context(), v.User.ID)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		q := r.URL.Query()
		d := homePage{Workspaces: workspaces, Search: strings.TrimSpace(q.Get("q"))}
		if utf8.RuneCountInString(d.Search) > maxSearch {
			d.Search = string([]rune(d.Search)[:maxSearch])
		}
		if id := q.Get("workspace"); id != "" {
			for i := range workspaces {
				if workspaces[i].ID == store.CanonicalID(id) {
					d.Filter = &workspaces[i]
				}
			}
			if d.Filter == nil {
				s.renderError(w, r, http.StatusNotFound, "There is no such workspace in your account.")
				return
			}
		}
		// The workspaces listed: the filter's or every one, but those that require single
		// sign-on of this visitor, which list nothing to a password session (their doors
		// refuse it too: sessionGate).
		lq := store.ListingQuery{Search: d.Search, After: q.Get("after"), Limit: homePageSize}
		if lq.After == "" {
			lq.Before = q.Get("before")
		}
		for _, ws := range workspaces {
			if (d.Filter == nil || d.Filter.ID == ws.ID) && s.sessionGate(r, ws.ID) == nil {
				lq.Workspaces = append(lq.Workspaces, ws.ID)
			}
		}
		list, err := s.Sites.SiteListingsPage(r.Context(), v.User.ID, lq)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		d.Sites = list.Sites
		sort.SliceStable(d.Sites, func(i, j int) bool { return d.Sites[i].Worse(d.Sites[j]) })
		link := func(key, id string) string {
			if id == "" {
				return ""
			}
			l := url.Values{key: {id}}
			if d.Filter != nil {
				l.Set("workspace", d.Filter.ID)
			}
			if d.Search != "" {
				l.Set("q", d.Search)
			}
			return "/?" + l.Encode()
		}
		d.Prev, d.Next = link("before", list.Prev), link("after", list.Next)
		if d.Platform, err = s.platformStatus(r); err != nil {
			s.error(w, r, err, "")
			return
		}
		s.render(w, r, http.StatusOK, "home", page{Title: "Sites", Flash: uiFlash(r), Data: d})
	})
}

// siteForm is the add/edit form: what the person typed, and a message per field. The rules
// are the site's own (store.Site.Validate), checked by the store's write: the form shows what
// the store refused.
type siteForm struct {
	ID        string // empty when adding
	Name      string
	Domain    string
	Pages     string         // one path a line
	Schedule  store.Schedule // off, daily or weekly, as posted: the store validates it
	Errors    map[string]string
	Duplicate *store.DuplicateError // the domain is the workspace's other site: the form links it
	MaxPages  int                   // MAX_PAGES_PER_SCAN, for the hint
	// Workspace receives a new site; Workspaces are those the visitor may add sites to.
	Workspace  string
	Workspaces []store.Workspace
	// Access is the site's access setting, on the edit page only (access.go).
	Access *accessView
	// Beacon is the site's beacon snippet, on the edit page only (field_beacon.go).
	Beacon *beaconView
	// OnPublish: the site is connected from the platform, so its publishes start scans; a site
	// added by hand is scanned only on demand and on its schedule.
	OnPublish bool
	// Locations are the runner locations the site is audited from (docs/runners.md), on the
	// edit page only; RunnersOn shows their form.
	Locations string
	RunnersOn bool
	// beaconErr is why "Add to Webflow" or "Remove from Webflow" did nothing, for the beacon card.
	beaconErr string
}

func formOf(site store.Site) siteForm {
	return siteForm{ID: site.ID, Name: site.Name, Domain: site.Domain, Pages: strings.Join(site.Pages, "\n"), Schedule: site.Schedule, OnPublish: site.PlatformSiteID != ""}
}

// Schedules are the choices of the form's schedule field.
func (siteForm) Schedules() []store.Schedule { return store.Schedules }

// parse reads the form into a site for the store to normalise and validate.
func (f *siteForm) parse(r *http.Request) store.Site {
	f.Name = strings.TrimSpace(r.PostForm.Get("name"))
	f.Domain = strings.TrimSpace(r.PostForm.Get("domain"))
	f.Pages = r.PostForm.Get("pages")
	f.Schedule = store.Schedule(strings.TrimSpace(r.PostForm.Get("schedule")))
	f.Errors = map[string]string{}
	return store.Site{Name: f.Name, Domain: f.Domain, Pages: strings.Split(f.Pages, "\n"), Schedule: f.Schedule}
}

// refused puts a store write's refusal on the form: the rules' messages by field, or the
// owner's other site on the same domain. ok is false for any other error.
func (f *siteForm) refused(err error) (status int, ok bool) {
	var dup *store.DuplicateError
	switch {
	case errors.As(err, &dup):
		f.Duplicate = dup
		f.Errors["domain"] = "This workspace already has a site for " + store.DisplayDomain(dup.Domain) + ":"
		return http.StatusConflict, true
	case errors.Is(err, store.ErrInvalid):
		f.Errors = store.FieldErrors(err)
		return http.StatusUnprocessableEntity, true
	}
	return 0, false
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// editableWorkspaces are the workspaces the visitor may add sites to, personal first.
func (s *server) editableWorkspaces(ctx context.Context, userID string) ([]store.Workspace, error) {
	all, err := s.Sites.WorkspacesOf(ctx, userID)
	var out []store.Workspace
	for _, w := range all {
		if w.Role.Can(store.ActEdit) {
			out = append(out, w)
		}
	}
	return out, err
}

func (s *server) handleNewSite() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visitorFrom(r.Context())
		f := siteForm{MaxPages: s.SiteRules.PageLimit(), Workspace: store.CanonicalID(r.URL.Query().Get("workspace"))}
		var err error
		if f.Workspaces, err = s.editableWorkspaces(r.Context(), v.User.ID); err != nil {
			s.error(w, r, err, "")
			return
		}
		if f.Workspace == "" {
			f.Workspace = store.PersonalWorkspace(v.User.ID)
		}
		s.render(w, r, http.StatusOK, "site_form", page{Title: "Add a site", Data: f})
	})
}

func (s *server) handleCreateSite() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visitorFrom(r.Context())
		f := siteForm{MaxPages: s.SiteRules.PageLimit(), Workspace: store.CanonicalID(r.PostForm.Get("workspace"))}
		if f.Workspace == "" {
			f.Workspace = store.PersonalWorkspace(v.User.ID)
		}
		// The site goes into a workspace the visitor may edit: 404 for another's, 403 for a viewer.
		if _, err := s.authorize(r.Context(), f.Workspace, store.ActEdit); err != nil {
			s.error(w, r, err, "There is no such workspace in your account.")
			return
		}
		var err error
		if f.Workspaces, err = s.editableWorkspaces(r.Context(), v.User.ID); err != nil {
			s.error(w, r, err, "")
			return
		}
		site := f.parse(r)
		site.ID, site.UserID, site.WorkspaceID, site.CreatedAt = store.NewID(), v.User.ID, f.Workspace, s.Now()
		site.NextScanAt = store.NextScanAt(site.Schedule, s.Now(), s.Now())
		err = s.Sites.CreateSiteWithin(r.Context(), site, s.MaxSitesPerWorkspace)
		status, refused := f.refused(err)
		switch {
		case refused:
		case errors.Is(err, store.ErrLimit):
			status, f.Errors["form"] = http.StatusUnprocessableEntity,
				fmt.Sprintf("This workspace already has %d sites, the most one workspace may have here. Delete a site to add another.", s.MaxSitesPerWorkspace)
		case err != nil:
			s.error(w, r, err, "")
			return
		default:
			s.Log.Info("site created", "user", v.User.ID, "site", site.ID)
			s.audit(r.Context(), f.Workspace, store.LogSiteAdded, site.Name, map[string]string{"siteId": site.ID, "domain": site.Domain})
			http.Redirect(w, r, "/sites/"+site.ID+"?done=site-added", http.StatusSeeOther)
			return
		}
		s.render(w, r, status, "site_form", page{Title: "Add a site", Data: f})
	})
}

func (s *server) handleEditSite() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, ok := s.ownSite(w, r)
		if !ok {
			return
		}
		s.editPage(w, r, http.StatusOK, site, formOf(site), nil)
	})
}

func (s *server) handleUpdateSite() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		old, ok := s.ownSite(w, r)
		if !ok {
			return
		}
		f := siteForm{ID: old.ID, MaxPages: s.SiteRules.PageLimit(), OnPublish: old.PlatformSiteID != ""}
		site := f.parse(r)
		// UserID is who asks: the store checks their role in the site's workspace.
		site.ID, site.UserID, site.Founding = old.ID, visitorFrom(r.Context()).User.ID, old.Founding
		// Taken only if the schedule changes: a new schedule starts a period from now.
		site.NextScanAt = store.NextScanAt(site.Schedule, s.Now(), s.Now())
		err := s.Sites.UpdateSite(r.Context(), site)
		status, refused := f.refused(err)
		switch {
		case refused:
		case err != nil:
			s.error(w, r, err, "There is no such site in your account.")
			return
		default:
			s.audit(r.Context(), old.WorkspaceID, store.LogSiteChanged, site.Name, map[string]string{"siteId": site.ID, "domain": site.Domain})
			http.Redirect(w, r, "/sites/"+site.ID+"?done=site-saved", http.StatusSeeOther)
			return
		}
		s.editPage(w, r, status, old, f, nil)
	})
}

func (s *server) handleDeleteSite() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, ok := s.ownSite(w, r)
		if !ok {
			return
		}
		if r.PostForm.Get("confirm") != "yes" {
			f := formOf(site)
			f.Errors = map[string]string{"confirm": "Tick the box to confirm that the site and all its scans should be deleted."}
			s.editPage(w, r, http.StatusUnprocessableEntity, site, f, nil)
			return
		}
		v := visitorFrom(r.Context())
		if err := s.Sites.DeleteSite(r.Context(), v.User.ID, site.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			s.error(w, r, err, "")
			return
		}
		s.audit(r.Context(), site.WorkspaceID, store.LogSiteDeleted, site.Name, map[string]string{"siteId": site.ID, "domain": site.Domain})
		s.Log.Info("site deleted", "user", v.User.ID, "site", site.ID)
		http.Redirect(w, r, "/?done=site-deleted", http.StatusSeeOther)
	})
}

// handleScanNow enqueues a manual scan of both strategies on the worker pool's queue. A scan
// already in flight is SCAN_ALREADY_ACTIVE, shown as a friendly message.
func (s *server) handleScanNow() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, ok := s.ownSite(w, r)
		if !ok {
			return
		}
		now := s.Now()
		scan := store.Scan{ID: store.NewID(), SiteID: site.ID, Status: store.StatusQueued, Strategy: store.StrategyBoth,
			Trigger: store.TriggerManual, CreatedAt: now}
		err := s.Sites.EnqueueScan(r.Context(), scan, store.KindScan, now)
		if errors.Is(err, store.ErrScanActive) {
			s.Log.Info("scan not enqueued", "site", site.ID, "err", store.ErrScanActive.Error())
			http.Redirect(w, r, "/sites/"+site.ID+"?done=scan-active", http.StatusSeeOther)
			return
		}
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		s.Log.Info("scan enqueued", "site", site.ID, "scan", scan.ID, "trigger", store.TriggerManual)
		http.Redirect(w, r, "/sites/"+site.ID+"/scans/"+scan.ID, http.StatusSeeOther)
	})
}

// strategyView is one strategy's summary of a scan on the site page.
type strategyView struct {
	Strategy store.Strategy
	Scores   store.ScanScores
	Vitals   []vitalView
	Pages    int
}

// vitalView is a site-level vital: the worst page's value for the strategy. Field marks a
// CrUX field value (INP) among the lab measurements.
type vitalView struct {
	Metric, Label string
	Field         bool
	Value         *float64
	PagePath      string
}

// strategyViews are the strategies of a scan's summary, mobile first: each one's scores and the
// worst page value of each budget vital.
func strategyViews(sum store.ScanSummary) []strategyView {
	var out []strategyView
	for _, st := range sum.Strategies {
		sv := strategyView{Strategy: st.Strategy, Scores: st.Scores, Pages: st.Pages}
		for _, m := range analysis.BudgetVitals() {
			vv := vitalView{Metric: m.Name, Label: m.Label, Field: m.Field}
			if w, ok := st.Worst[m.Name]; ok {
				val := w.Value
				vv.Value, vv.PagePath = &val, w.PagePath
			}
			sv.Vitals = append(sv.Vitals, vv)
		}
		out = append(out, sv)
	}
	return out
}

// strategySummaries are the strategy views of results (a scan still running, or without a
// summary).
func strategySummaries(results []store.PageResult) []strategyView {
	return strategyViews(store.Summarize(results))
}

// sitePageData is the site page.
type sitePageData struct {
	Site       store.Site
	Latest     *store.Scan
	Publish    *store.Publish  // the publish that started the latest scan; nil when none did
	Publishes  []store.Publish // the latest three the trend marks, newest first
	Strategies []strategyView
	Charts     []svg.TrendChart // the trend's tabs
	ChartScans int
	History    []store.Scan
	// PreviousOf is, for each completed scan of History, the completed scan before it: the
	// history's "compare with previous" links.
	PreviousOf  map[string]string
	Regressions []analysis.Regression
	// Improvements are what got better since the previous scan: the recovery after regressions.
	Improvements []analysis.Regression
	Previous     *store.Scan
	Violations   []analysis.Violation
	HasBudgets   bool
	InFlight     *store.Scan
	Troubled     *store.Scan  // the newest scan, when some of its audits failed
	Errors       []errorGroup // those failures, identical errors told once
	CI           ciSnippet
	ScanActive   bool // "Scan now" was refused: SCAN_ALREADY_ACTIVE
	Replay       bool // the site's audits are replayed from recorded runs (the demo)
	Field        fieldPanel
}

// chartPublishes is how many publishes the trend chart marks, the latest ones.
const chartPublishes = 50

// handleSite is a site's page: latest scores per strategy, vitals, trend, history, regressions.
func (s *server) handleSite() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, ok := s.ownSite(w, r)
		if !ok {
			return
		}
		ctx, uid := r.Context(), visitorFrom(r.Context()).User.ID
		d := sitePageData{Site: site, ScanActive: r.URL.Query().Get("done") == "scan-active", CI: newCISnippet(s.BaseURL, site.ID),
			Replay: s.Replayed(site)}
		// Two statements (issue 25): the scans, then the latest two's pages, the newest one's
		// errors, the publishes and the budgets. The trend reads each scan's summary.
		v, err := s.Sites.SiteView(ctx, uid, site.ID, 50, 20, chartPublishes)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		completed, history := v.Completed, v.History
		d.History = history
		d.PreviousOf = map[string]string{}
		for i, sc := range completed[:max(len(completed)-1, 0)] {
			d.PreviousOf[sc.ID] = completed[i+1].ID
		}
		if len(history) > 0 && len(v.Errors) > 0 {
			d.Troubled, d.Errors = &history[0], groupAuditErrors(v.Errors)
		}
		for i := range history {
			if history[i].Status == store.StatusQueued || history[i].Status == store.StatusRunning {
				d.InFlight = &history[i]
				break
			}
		}
		points := make([]svg.TrendPoint, 0, len(completed))
		for i := len(completed) - 1; i >= 0; i-- {
			c := completed[i]
			if c.CompletedAt != nil {
				p := svg.TrendPoint{At: *c.CompletedAt, Scores: c.Scores, Vitals: map[string]*float64{}}
				for _, m := range svg.TrendVitals {
					p.Vitals[m] = summaryOf(c).SiteVital(m)
				}
				points = append(points, p)
			}
		}
		var publishes []store.Publish
		if len(points) > 0 {
			publishes = v.Publishes // the publishes since the chart's first scan (chartPublishes at most)
		}
		d.Charts, d.ChartScans = svg.TrendCharts(points, publishes), len(points)
		d.Publishes = publishes[max(0, len(publishes)-3):]
		slices.Reverse(d.Publishes)
		if len(completed) > 0 {
			d.Latest, d.Publish = &completed[0], v.Publish
			latest := v.Metrics[completed[0].ID]
			d.Strategies = strategyViews(summaryOf(completed[0]))
			if len(completed) > 1 {
				d.Previous = &completed[1]
				d.Regressions = analysis.Regressions(v.Metrics[completed[1].ID], latest)
				d.Improvements = analysis.Improvements(v.Metrics[completed[1].ID], latest)
			}
			d.HasBudgets = len(v.Budgets)+len(v.Rules) > 0
			d.Violations = analysis.CheckBudgets(d.Latest.Scores, latest, v.Budgets, v.Rules)
		}
		in := fieldInput{Lab: map[string][]svg.LabPoint{}, LabLatest: map[string]*float64{}, Regressions: d.Regressions,
			PageURLs: map[string]string{}, Publish: d.Publish, Publishes: publishes}
		for _, pt := range points {
			for m, v := range pt.Vitals {
				in.Lab[m] = append(in.Lab[m], svg.LabPoint{At: pt.At, Value: v})
			}
		}
		if d.Latest != nil {
			for _, m := range svg.FieldMetricsShown {
				in.LabLatest[m] = summaryOf(*d.Latest).SiteVital(m)
			}
			for _, r := range v.Metrics[d.Latest.ID] {
				in.PageURLs[r.PagePath] = r.PageURL
			}
		}
		if d.Field, err = s.fieldPanelOf(ctx, uid, site, in); err != nil {
			s.error(w, r, err, "")
			return
		}
		s.render(w, r, http.StatusOK, "site", page{Title: site.Name, Flash: uiFlash(r), Data: d})
	})
}

// summaryOf is a completed scan's summary; the empty one when it has none (it never lacks one
// once migration 018 ran).
func summaryOf(sc store.Scan) store.ScanSummary {
	if sc.Summary == nil {
		return store.ScanSummary{}
	}
	return *sc.Summary
}
