package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sitepulse/store"
)

// This file holds generate_client_report, the one tool that writes.

type clientReport struct {
	URL           string `json:"url"`
	Token         string `json:"token"`
	ExpiresInDays int    `json:"expiresInDays"`
}

func (s *Server) generateClientReport(ctx context.Context, userID string, a args) (clientReport, error) {
	sc, err := s.scan(ctx, userID, a.str("scanId", ""))
	if err != nil {
		return clientReport{}, err
	}
	if err := pruned(sc); err != nil {
		return clientReport{}, err
	}
	if sc.Status != store.StatusComplete {
		return clientReport{}, toolError("This scan is " + sc.Status + ", not complete: a report can only be made of a completed scan. get_latest_scan gives the latest completed one.")
	}
	title := a.str("title", "")
	if title == "" {
		st, err := s.store.Site(ctx, userID, sc.SiteID)
		if err != nil {
			return clientReport{}, err
		}
		title = defaultTitle(st.Name)
	}
	days := a.integer("expiresInDays", 30)
	now := s.now().UTC()
	var expires *time.Time
	if days > 0 {
		t := now.AddDate(0, 0, days)
		expires = &t
	}
	token, hash := store.NewSecret("")
	r := store.Report{ID: store.NewID(), TokenHash: hash, ScanID: sc.ID, UserID: userID, Title: title, CreatedAt: now, ExpiresAt: expires}
	err = s.store.CreateReportWithin(ctx, r, MaxActiveReports)
	if errors.Is(err, store.ErrLimit) {
		return clientReport{}, toolError(fmt.Sprintf("This account already has %d active report links, the most it may hold. Revoke some under Reports in SitePulse, or let them expire, before making another.", MaxActiveReports))
	}
	if err != nil {
		return clientReport{}, err
	}
	return clientReport{URL: s.baseURL + "/report/" + token, Token: token, ExpiresInDays: days}, nil
}

// defaultTitle is "<siteName> Performance Report", cut to the 200-character limit.
func defaultTitle(siteName string) string {
	const suffix = " Performance Report"
	name := []rune(siteName)
	if max := 200 - len(suffix); len(name) > max {
		name = name[:max]
	}
	return string(name) + suffix
}

// links points at the report page itself (2025-06-18 and later), so a client can offer to open it.
func (r clientReport) links() []resourceLink {
	return []resourceLink{{Type: "resource_link", URI: r.URL, Name: "client-report", Title: "Client report",
		Description: "The shareable report page; anyone with the link can open it until it expires.", MimeType: "text/html"}}
}
