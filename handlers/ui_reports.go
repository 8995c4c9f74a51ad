package handlers

import (
	"context"
	"net/http"
	"time"

	"sitepulse/store"
)

// ReportStore is what the reports list and the public report page read: shareable reports, by
// their owner or by their token.
type ReportStore interface {
	ReportsOf(ctx context.Context, userID string) ([]store.Report, error)
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
}

// handleReports lists the client reports the user made through MCP (generate_client_report).
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
			rows = append(rows, reportRow{Report: rep, SiteName: names[rep.SiteID], State: reportState(rep, now),
				CanRevoke: roles[rep.WorkspaceID].Can(store.ActEdit)})
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
		if store.ValidUUID(id) {
			err = s.authorizeReport(r.Context(), uid, id)
		}
		if err == nil {
			err = s.Reports.RevokeReport(r.Context(), uid, id, s.Now())
		}
		if err != nil {
			s.error(w, r, err, "There is no such report in your account.")
			return
		}
		s.Log.Info("report revoked", "user", uid, "report", id)
		http.Redirect(w, r, "/reports?done=report-revoked", http.StatusSeeOther)
	})
}

// authorizeReport answers whether the visitor may revoke report id: store.ErrNotFound outside
// their workspaces, store.ErrForbidden for a viewer.
func (s *server) authorizeReport(ctx context.Context, userID, id string) error {
	reports, err := s.Reports.ReportsOf(ctx, userID)
	if err != nil {
		return err
	}
	for _, rep := range reports {
		if rep.ID == id {
			_, err := s.authorize(ctx, rep.WorkspaceID, store.ActEdit)
			return err
		}
	}
	return store.ErrNotFound
}
