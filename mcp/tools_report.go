package mcp

import (
	"context"
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

func (s *Server) generateClientReport(ctx context.Context, userID string, a args) (any, error) {
	sc, err := s.scan(ctx, userID, a.str("scanId", ""))
	if err != nil {
		return nil, err
	}
	if sc.Status != store.StatusComplete {
		return nil, toolError("This scan is " + sc.Status + ", not complete: a report can only be made of a completed scan. get_latest_scan gives the latest completed one.")
	}
	title := a.str("title", "")
	if title == "" {
		st, err := s.store.Site(ctx, userID, sc.SiteID)
		if err != nil {
			return nil, err
		}
		title = defaultTitle(st.Name)
	}
	days := a.integer("expiresInDays", 30)
	now := s.now().UTC()
	if err := s.reportRoom(ctx, userID, now); err != nil {
		return nil, err
	}
	var expires *time.Time
	if days > 0 {
		t := now.AddDate(0, 0, days)
		expires = &t
	}
	token, hash := store.NewSecret("")
	r := store.Report{ID: store.NewID(), TokenHash: hash, ScanID: sc.ID, UserID: userID, Title: title, CreatedAt: now, ExpiresAt: expires}
	if err := s.store.CreateReport(ctx, r); err != nil {
		return nil, err
	}
	return clientReport{URL: s.baseURL + "/report/" + token, Token: token, ExpiresInDays: days}, nil
}

// reportRoom refuses a new report when the account already holds MaxActiveReports active ones.
// Concurrent calls may pass it together; a batch carries at most MaxBatch of them.
func (s *Server) reportRoom(ctx context.Context, userID string, now time.Time) error {
	reports, err := s.store.ReportsOf(ctx, userID)
	if err != nil {
		return err
	}
	active := 0
	for _, r := range reports {
		if r.RevokedAt == nil && (r.ExpiresAt == nil || r.ExpiresAt.After(now)) {
			active++
		}
	}
	if active >= MaxActiveReports {
		return toolError(fmt.Sprintf("This account already has %d active report links, the most it may hold. Revoke some under Reports in SitePulse, or let them expire, before making another.", active))
	}
	return nil
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
