package store

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Reads answers questions a request asks as a whole, each in one statement on Postgres with the
// caller's workspace membership inside it (issue 25: reads that do one thing once). A site or
// scan outside the user's workspaces is ErrNotFound, the same answer as an unknown id.
type Reads interface {
	// SiteListings lists the sites of every workspace the user belongs to, by name, each with
	// its workspace's name, latest scan and triage; of workspaceID only when it is not empty
	// (an API key's view, the sites list's filter).
	SiteListings(ctx context.Context, userID, workspaceID string) ([]SiteListing, error)
	// SiteListingsPage is the sites list a page at a time (issue 46: a workspace of 2,000 sites):
	// the sites of q.Workspaces that are the user's, whose name holds q.Search, in (name, id)
	// order, q.Limit of them after or before the site q.After or q.Before names; each with what
	// SiteListings gives, read for the page's sites only.
	SiteListingsPage(ctx context.Context, userID string, q ListingQuery) (ListingPage, error)
	// PageDetails reads one successful result of a scan of the user's: the result of pagePath
	// and strategy, or with pagePath empty the worst page's for strategy (the lowest performance
	// score, a page without one after every page with one, then the smaller path).
	PageDetails(ctx context.Context, userID, scanID, pagePath string, strategy Strategy) (PageDetails, error)
	// LatestResults reads the latest completed scan of a site of the user's and its successful
	// results in page order, leaving the results out (nil) when that scan is knownScanID: the
	// caller already holds what it makes of them. Scan is nil when the site has none.
	LatestResults(ctx context.Context, userID, siteID, knownScanID string) (LatestResults, error)
	// LatestTwo reads the two latest completed scans of a site of the user's, newest first
	// (none, one or two), each with its page metrics as PageMetrics reads them but for the
	// scans in known, whose metrics the caller holds (nil), and the publish that started the
	// latest.
	LatestTwo(ctx context.Context, userID, siteID string, known []string) (LatestTwo, error)
	// CreateScanReport stores report r of scan r.ScanID of r.UserID's, its title the site's
	// default title (DefaultReportTitle) when r.Title is empty, when all hold: principal p may
	// publish a report in the scan's workspace (Authorize with ActReport), the scan is complete
	// and the user holds fewer than max active reports. Otherwise it stores nothing and says why:
	// ErrInvalid (Report.Validate), ErrNotFound (the scan is not the user's, or outside an API key's workspace), ErrForbidden,
	// ErrScanNotComplete or ErrLimit. Calls racing at the cap may together pass it by as many as
	// race: the check and the insert are one statement, not a locked transaction.
	CreateScanReport(ctx context.Context, p Principal, r Report, max int) (ScanReport, error)
	// ScanView reads a scan of the user's of any status with its site's name, domain and
	// budgets: MCP's get_scan.
	ScanView(ctx context.Context, userID, scanID string) (ScanView, error)
	// ExportScan streams the export of a site of the user's: head gets the site (its ID, Name and
	// WorkspaceID only: the export's security log line needs no more) and the
	// site's scan scanID, or with scanID empty its latest completed scan (nil when there is no
	// such scan); then, when that scan is complete and head answered nil, row gets each
	// successful result in page order with the fields an export writes (ExportRow). full adds
	// what only the JSON export writes: the third-party scripts, the accessibility issues, the
	// result's Explain and every vital, and previous: the run of the same page and strategy in the site's
	// previous completed scan (the scan PreviousPairs picks), with its ScanID, PageURL, scores,
	// vitals and Explain, what analysis.Compare reads; nil when it has none, and always without
	// full. ErrNotFound when the site is not the user's.
	ExportScan(ctx context.Context, userID, siteID, scanID string, full bool, head func(site Site, sc *Scan) error, row func(r PageResult, previous *PageResult) error) error
}

// ExportRow is what an export writes of a result (ExportScan streams only this): the page,
// scores, the vitals LCP, CLS, INP, FCP and TTFB, CrUX, opportunities and, when full, the
// third-party scripts, accessibility issues, Explain and every vital (what analysis.Compare
// reads).
func ExportRow(r PageResult, full bool) PageResult {
	v := r.CoreWebVitals
	out := PageResult{ScanID: r.ScanID, PageURL: r.PageURL, PagePath: r.PagePath, Strategy: r.Strategy, Scores: r.Scores,
		CoreWebVitals: Vitals{LCP: v.LCP, CLS: v.CLS, INP: v.INP, FCP: v.FCP, TTFB: v.TTFB}, Crux: r.Crux, Opportunities: r.Opportunities}
	if full { // and every vital: what analysis.Compare reads
		out.ThirdPartyScripts, out.A11yIssues, out.Explain, out.CoreWebVitals = r.ThirdPartyScripts, r.A11yIssues, r.Explain, r.CoreWebVitals
	}
	return out
}

// SiteListing is a site with the name of its workspace and what the sites list triages by:
// its latest scan of any status (nil: never scanned) and what its latest completed scan left.
type SiteListing struct {
	Site
	WorkspaceName string
	LastScan      *Scan
	Triage        Triage
}

// ListingQuery asks SiteListingsPage for a page of the sites list.
type ListingQuery struct {
	// Workspaces are the workspaces listed (each still one of the user's); none lists nothing.
	Workspaces []string
	// AllWorkspaces lists every workspace the user belongs to, Workspaces left aside (MCP's
	// list_sites for an OAuth token: no read of the workspaces first).
	AllWorkspaces bool
	// Search keeps the sites whose name contains it, ignoring case; empty keeps every site.
	Search string
	// After and Before are a site's ID: the page after it or before it in (name, id) order, the
	// name compared byte by byte (After when both are set). Both empty: the first page. A site that is not the user's, or
	// no longer there, reads as the first page.
	After, Before string
	Limit         int
}

// ListingPage is a page of the sites list in (name, id) order: Next and Prev are the cursors of
// the pages after and before it (ListingQuery.After and Before), empty when there is none.
type ListingPage struct {
	Sites      []SiteListing
	Next, Prev string
}

// Page cuts sorted, a whole list in (name, id) order with one site more than a page in the
// direction read when there is one, into q's page: what both stores share of keyset paging.
// sorted must begin after q.After, or end before q.Before, already (backwards: newest last).
func (q ListingQuery) Page(sorted []SiteListing) ListingPage {
	var p ListingPage
	more := len(sorted) > q.Limit
	if q.Before != "" {
		if more {
			sorted = sorted[len(sorted)-q.Limit:]
		}
		p.Sites = sorted
		if len(sorted) > 0 {
			p.Next = sorted[len(sorted)-1].ID
			if more {
				p.Prev = sorted[0].ID
			}
		}
		return p
	}
	if more {
		sorted = sorted[:q.Limit]
	}
	p.Sites = sorted
	if len(sorted) > 0 {
		if more {
			p.Next = sorted[len(sorted)-1].ID
		}
		if q.After != "" {
			p.Prev = sorted[0].ID
		}
	}
	return p
}

// Triage is what a site's latest completed scan left (SwapBudgetState keeps it): whether it
// broke a budget or alert rule and which metrics (Broken, by interface name; empty for a
// state kept before it was recorded), and how many regressions against the completed scan
// before it survived confirmation.
type Triage struct {
	BudgetsBroken bool
	Broken        []string
	Regressions   int
}

// Worse orders sites worst first for the sites list: a failing latest scan, then more
// confirmed regressions, then more broken budgets, then the lower health score (none last),
// then by name.
func (a SiteListing) Worse(b SiteListing) bool {
	fa, fb := a.LastScan != nil && a.LastScan.Status == StatusFailed, b.LastScan != nil && b.LastScan.Status == StatusFailed
	switch {
	case fa != fb:
		return fa
	case a.Triage.Regressions != b.Triage.Regressions:
		return a.Triage.Regressions > b.Triage.Regressions
	case a.Triage.BudgetsBroken != b.Triage.BudgetsBroken:
		return a.Triage.BudgetsBroken
	case len(a.Triage.Broken) != len(b.Triage.Broken):
		return len(a.Triage.Broken) > len(b.Triage.Broken)
	case (a.HealthScore == nil) != (b.HealthScore == nil):
		return a.HealthScore != nil
	case a.HealthScore != nil && *a.HealthScore != *b.HealthScore:
		return *a.HealthScore < *b.HealthScore
	case a.Name != b.Name:
		return a.Name < b.Name
	}
	return a.ID < b.ID
}

// PageDetails is PageDetails' answer: the scan's status and, when Found, the result.
type PageDetails struct {
	ScanStatus ScanStatus
	Found      bool
	Result     PageResult
}

// LatestResults is LatestResults' answer.
type LatestResults struct {
	Scan    *Scan
	Results []PageResult // nil when Scan is nil or the caller's knownScanID
}

// LatestTwo is LatestTwo's answer: Scans newest first, Metrics[i] the page metrics of Scans[i]
// (nil when known), and the publish that started Scans[0] (PublishedOn nil when none did).
type LatestTwo struct {
	Scans       []Scan
	Metrics     [][]PageResult
	PublishedBy string
	PublishedOn *time.Time
}

// ScanView is ScanView's answer.
type ScanView struct {
	Scan
	SiteName, SiteDomain string
	Budgets              map[string]Budget
}

// ScanReport is what CreateScanReport stored: the report's title and the status of its scan,
// and when retention removed the scan's page details (then nothing is stored: ErrGone).
type ScanReport struct {
	Title           string
	ScanStatus      ScanStatus
	DetailsPrunedAt *time.Time
}

// ErrScanNotComplete is a report asked of a scan that has not completed; ScanReport.ScanStatus
// says what it is.
var ErrScanNotComplete = errors.New("scan not complete")

// DefaultReportTitle is a client report's title when none is given: "<site name> Performance
// Report", the name cut so the title fits the 200-character limit.
func DefaultReportTitle(siteName string) string {
	const suffix = " Performance Report"
	name := []rune(siteName)
	if max := 200 - len([]rune(suffix)); len(name) > max {
		name = name[:max]
	}
	return string(name) + suffix
}

// NewReport makes report of scan scanID by userID for CreateScanReport, as the MCP tool and the
// scan page's form both do: a fresh token (returned, to be shown once) whose hash is stored,
// sealed by seal when seal is not nil (so the Reports list can show its link again), expiring
// days after now (0: never).
func NewReport(scanID, userID, title string, days int, now time.Time, seal func(token, reportID string) (string, error)) (Report, string, error) {
	token, hash := NewSecret("")
	r := Report{ID: NewID(), TokenHash: hash, ScanID: CanonicalID(scanID), UserID: userID, Title: title, CreatedAt: now}
	if days > 0 {
		t := now.AddDate(0, 0, days)
		r.ExpiresAt = &t
	}
	if seal != nil {
		var err error
		if r.TokenSealed, err = seal(token, r.ID); err != nil {
			return r, "", fmt.Errorf("seal report link: %w", err)
		}
	}
	return r, token, nil
}

// MaxReportTitle is the most characters a client report's title may have.
const MaxReportTitle = 200

// Validate checks what a person or a client wrote of a report: its title, which strangers read
// on the public page (empty: the default title). CreateScanReport calls it, so the tool and the
// scan page's form cannot disagree.
func (r Report) Validate() error {
	switch {
	case utf8.RuneCountInString(r.Title) > MaxReportTitle:
		return &InvalidError{Field: "title", Message: fmt.Sprintf("Keep the title to %d characters.", MaxReportTitle)}
	case DisplayTextProblem(r.Title) != "":
		return &InvalidError{Field: "title", Message: "The title " + DisplayTextProblem(r.Title) + "."}
	}
	return nil
}

// ReportRoles are the roles whose members principal p may publish a report for, in workspace
// workspaceID (Authorize with ActReport), for a statement that checks the role itself.
func ReportRoles(p Principal, workspaceID string) []string {
	var out []string
	for _, r := range []Role{RoleOwner, RoleEditor, RoleViewer} {
		if Authorize(p, Workspace{ID: workspaceID, Role: r}, ActReport) == nil {
			out = append(out, string(r))
		}
	}
	return out
}

// WorsePage orders pages worst first: the lower performance score first, a page without one
// last, ties broken by path. analysis.WorstPage, the memory store's PageDetails and the
// Postgres statement of PageDetails (its ORDER BY) choose the worst page by it.
func WorsePage(a, b PageResult) bool {
	pa, pb := a.Scores.Performance, b.Scores.Performance
	switch {
	case pa != nil && pb == nil:
		return true
	case pa == nil && pb != nil:
		return false
	case pa != nil && pb != nil && *pa != *pb:
		return *pa < *pb
	}
	return a.PagePath < b.PagePath
}
