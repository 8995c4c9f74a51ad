package mcp

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"sitepulse/store"
)

// This file holds generate_client_report, the one tool that writes.

type clientReport struct {
	URL           string `json:"url"`
	Token         string `json:"token"`
	ExpiresInDays int    `json:"expiresInDays"`
}

// generateClientReport makes the report in one statement that checks the caller's role in the
// scan's workspace, the scan's status and the account's active reports, and inserts
// (store.CreateScanReport): the tool is SelfAuthorizing.
func (s *Server) generateClientReport(ctx context.Context, userID string, a args) (clientReport, error) {
	days := a.integer("expiresInDays", 30)
	var seal func(token, reportID string) (string, error)
	if s.links != nil {
		seal = s.links.SealReportLink
	}
	r, token, err := store.NewReport(a.str("scanId", ""), userID, a.str("title", ""), days, s.now().UTC(), seal)
	if err != nil {
		return clientReport{}, err
	}
	p := store.PrincipalFrom(ctx)
	if p.UserID == "" { // Serve's caller named the user without a principal: a user's call
		p = store.Principal{UserID: userID}
	}
	var sr store.ScanReport
	sr, err = s.writes.CreateScanReport(ctx, p, r, MaxActiveReports)
	switch {
	case errors.Is(err, store.ErrInvalid):
		return clientReport{}, toolError(store.InvalidMessage(err))
	case errors.Is(err, store.ErrNotFound):
		return clientReport{}, errScanNotFound
	case errors.Is(err, store.ErrForbidden):
		return clientReport{}, toolError(forbidden(store.ActReport))
	case errors.Is(err, store.ErrGone) && sr.DetailsPrunedAt != nil:
		return clientReport{}, pruned(store.Scan{DetailsPrunedAt: sr.DetailsPrunedAt})
	case errors.Is(err, store.ErrScanNotComplete):
		return clientReport{}, toolError("This scan is " + sr.ScanStatus + ", not complete: a report can only be made of a completed scan. get_latest_scan gives the latest completed one.")
	case errors.Is(err, store.ErrLimit):
		return clientReport{}, toolError(fmt.Sprintf("This account already has %d active report links, the most it may hold. Revoke some under Reports in SitePulse, or let them expire, before making another.", MaxActiveReports))
	case err != nil:
		return clientReport{}, err
	}
	if sr.Title != "" {
		r.Title = sr.Title
	}
	s.recordReport(ctx, userID, r, days)
	return clientReport{URL: s.baseURL + "/report/" + token, Token: token, ExpiresInDays: days}, nil
}

// recordReport records a report link made through MCP in its site's workspace's security log,
// as the scan page's "Share a report" does; never the link, which is the credential.
func (s *Server) recordReport(ctx context.Context, userID string, r store.Report, days int) {
	if s.auditLog == nil {
		return
	}
	scan, err := s.scans.Scan(ctx, userID, r.ScanID)
	if err != nil {
		return
	}
	site, err := s.sites.Site(ctx, userID, scan.SiteID)
	if err != nil {
		return
	}
	s.auditLog.Record(ctx, store.LogEvent{WorkspaceID: site.WorkspaceID, ActorID: userID, Kind: store.LogReportCreated, Target: r.Title,
		Details: map[string]string{"reportId": r.ID, "siteId": site.ID, "scanId": scan.ID, "expiresInDays": strconv.Itoa(days), "via": "mcp"}})
}

// links points at the report page itself (2025-06-18 and later), so a client can offer to open it.
func (r clientReport) links() []resourceLink {
	return []resourceLink{{Type: "resource_link", URI: r.URL, Name: "client-report", Title: "Client report",
		Description: "The shareable report page; anyone with the link can open it until it expires.", MimeType: "text/html"}}
}
