package handlers

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"sitepulse/mcp"
	"sitepulse/store"
)

// ReportStore is what the reports list and the public report page read: shareable reports, by
// their owner or by their token.
type ReportStore interface {
	ReportsOf(ctx context.Context, userID string) ([]store.Report, error)
	// CreateScanReport is the scan page's "Share a report", the same one statement (and rules)
	// as the MCP tool generate_client_report's.
	CreateScanReport(ctx context.Context, p store.Principal, r store.Report, max int) (store.ScanReport, error)
	RevokeReport(ctx context.Context, userID, reportID string, now time.Time) error
	SitesOf(ctx context.Context, userID string) ([]store.Site, error)
	WorkspacesOf(ctx context.Context, userID string) ([]store.Workspace, error)
	ReportByHash(ctx context.Context, tokenHash string) (store.Report, error)
	ReportScan(ctx context.Context, r store.Report) (store.Scan, store.Site, []store.PageResult, error)
	// ReportImage serves the report's scan's screenshots (images.go).
	ReportImage(ctx context.Context, r store.Report, pagePath string, strategy store.Strategy, index int) (store.PageImage, error)
}

// reportRow is a client report on the reports page, with the scan and site it shows.
type reportRow struct {
	store.Report
	SiteName string
	State    string // active, expired or revoked
	// CanRevoke: the visitor is an owner or editor of the report's workspace.
	CanRevoke bool
	// Link is an active report's address, opened from its sealed token; "" when the report was
	// kept hashed only (made before links were sealed, or without PLATFORM_TOKEN_KEY).
	Link string
}

// handleReports lists the client reports of the user's workspaces, made on a scan's page or
// through MCP (generate_client_report), with a live report's link to copy again.
func (s *server) handleReports() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uid := visitorFrom(r.Context()).User.ID
		reports, err := s.Reports.ReportsOf(r.Context(), uid)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		sites, err := s.Reports.SitesOf(r.Context(), uid)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		names := make(map[string]string, len(sites))
		for _, site := range sites {
			names[site.ID] = site.Name
		}
		workspaces, err := s.Reports.WorkspacesOf(r.Context(), uid)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		roles := make(map[string]store.Role, len(workspaces))
		for _, ws := range workspaces {
			roles[ws.ID] = ws.Role
		}
		now := s.Now()
		rows := make([]reportRow, 0, len(reports))
		for _, rep := range reports {
			if s.sessionGate(r, rep.WorkspaceID) != nil {
				continue // the workspace requires single sign-on of this visitor
			}
			row := reportRow{Report: rep, SiteName: names[rep.SiteID], State: reportState(rep, now),
				CanRevoke: roles[rep.WorkspaceID].Can(store.ActEdit)}
			if row.State == "active" && rep.TokenSealed != "" {
				if token, err := s.ChannelKeys.OpenReportLink(rep.TokenSealed, rep.ID); err == nil {
					row.Link = s.BaseURL + "/report/" + token
				}
			}
			rows = append(rows, row)
		}
		s.render(w, r, http.StatusOK, "reports", page{Title: "Client reports", Flash: uiFlash(r), Data: rows})
	})
}

func (s *server) handleRevokeReport() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uid := visitorFrom(r.Context()).User.ID
		id := store.CanonicalID(r.PathValue("reportId"))
		// The report is read in the visitor's workspaces, then the role asked: a viewer gets 403.
		err := error(store.ErrNotFound)
		var rep store.Report
		if store.ValidUUID(id) {
			rep, err = s.authorizeReport(r, uid, id)
		}
		if err == nil {
			err = s.Reports.RevokeReport(r.Context(), uid, id, s.Now())
		}
		if err != nil {
			s.refuse(w, r, err, "There is no such report in your account.")
			return
		}
		s.Log.Info("report revoked", "user", uid, "report", id)
		s.audit(r.Context(), rep.WorkspaceID, store.LogReportRevoked, rep.Title, map[string]string{"reportId": rep.ID, "scanId": rep.ScanID})
		http.Redirect(w, r, "/reports?done=report-revoked", http.StatusSeeOther)
	})
}

// authorizeReport answers whether the visitor may revoke report id: store.ErrNotFound outside
// their workspaces, store.ErrForbidden for a viewer.
func (s *server) authorizeReport(r *http.Request, userID, id string) (store.Report, error) {
	ctx := r.Context()
	reports, err := s.Reports.ReportsOf(ctx, userID)
	if err != nil {
		return store.Report{}, err
	}
	for _, rep := range reports {
		if rep.ID == id {
			if _, err := s.authorize(ctx, rep.WorkspaceID, store.ActEdit); err != nil {
				return rep, err
			}
			return rep, s.sessionGate(r, rep.WorkspaceID)
		}
	}
	return store.Report{}, store.ErrNotFound
}

type reportExpiry struct {
	Days  int
	Label string
}

// reportExpiries are the scan page's choices of how long a report's link works, in days (0:
// never), as generate_client_report's expiresInDays; 30 is the default of both.
var reportExpiries = []reportExpiry{{7, "7 days"}, {30, "30 days"}, {90, "90 days"}, {365, "1 year"}, {0, "Never"}}

// handleShareReport is the scan page's "Share a report": the scan's public report, made by the
// store call the MCP tool makes (role, scan complete, not pruned, the active-report cap),
// then a redirect to the Reports list, which shows its link once with a copy button.
func (s *server) handleShareReport() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, scan, ok := s.ownScan(w, r)
		if !ok {
			return
		}
		uid := visitorFrom(r.Context()).User.ID
		days, err := strconv.Atoi(r.PostForm.Get("expires"))
		if err != nil || !slices.ContainsFunc(reportExpiries, func(e reportExpiry) bool { return e.Days == days }) {
			s.renderError(w, r, http.StatusUnprocessableEntity, "Choose how long the link works from the list.")
			return
		}
		rep, token, err := store.NewReport(scan.ID, uid, strings.TrimSpace(r.PostForm.Get("title")), days, s.Now(), s.ChannelKeys.SealReportLink)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		back := "/sites/" + site.ID + "/scans/" + scan.ID
		sr, err := s.Reports.CreateScanReport(r.Context(), store.Principal{UserID: uid}, rep, mcp.MaxActiveReports)
		switch {
		case errors.Is(err, store.ErrInvalid):
			http.Redirect(w, r, back+"?done=report-title#share", http.StatusSeeOther)
			return
		case errors.Is(err, store.ErrLimit):
			http.Redirect(w, r, back+"?done=report-limit#share", http.StatusSeeOther)
			return
		case errors.Is(err, store.ErrScanNotComplete):
			s.renderError(w, r, http.StatusConflict, "This scan is "+string(sr.ScanStatus)+": a report can only be made of a completed scan.")
			return
		case errors.Is(err, store.ErrGone):
			s.renderError(w, r, http.StatusGone, prunedMessage(scan)+" Share a report of a recent scan instead.")
			return
		case err != nil:
			s.error(w, r, err, "There is no such scan for this site.")
			return
		}
		s.Log.Info("report created", "user", uid, "report", rep.ID, "scan", scan.ID) // never the link: it is the credential
		expires := "never"
		if rep.ExpiresAt != nil {
			expires = rep.ExpiresAt.UTC().Format(time.RFC3339)
		}
		s.audit(r.Context(), site.WorkspaceID, store.LogReportCreated, rep.Title, map[string]string{"reportId": rep.ID, "siteId": site.ID, "scanId": scan.ID, "expires": expires})
		detail := "Anyone with it can open the report, without an account, until it expires or is revoked."
		if rep.TokenSealed == "" {
			detail = "Copy it now: this server keeps only a fingerprint of it, so it cannot be shown again."
		}
		s.redirectNotice(w, r, "/reports#report-"+rep.ID, notice{Text: "Report “" + sr.Title + "” is ready: send this link to your client.",
			Detail: detail, Secret: s.BaseURL + "/report/" + token, Label: "Report link"})
	})
}
