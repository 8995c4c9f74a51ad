package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/discover"
	"sitepulse/store"
)

// FieldCheckStore is what the daily field check reads and writes, as the system: the site and
// its monitored pages, its latest completed scan (what the lab saw), its workspace's channels,
// and the deliveries it plans.
type FieldCheckStore interface {
	EnqueueDueField(ctx context.Context, now time.Time, limit int) (int, error)
	CruxTarget(ctx context.Context, siteID string) (store.CruxTarget, error)
	LatestCompletedScan(ctx context.Context, userID, siteID string) (store.Scan, error)
	PreviousPairs(ctx context.Context, userID, scanID string) (store.ScanPairs, error)
	Workspace(ctx context.Context, userID, workspaceID string) (store.Workspace, error)
	WorkspaceChannels(ctx context.Context, workspaceID string) ([]store.Channel, error)
	PlanDeliveries(ctx context.Context, workspaceID string, ds []store.Delivery, jobs []store.JobArgs, now time.Time) (int, error)
}

// FieldCheck is the daily field check (store.KindField): the worker that judges one site's
// field-only regressions whether or not it was scanned, and its schedule (ScheduleOnce, a pass
// of the pool's scheduler). A scan's alerts judge the same on completion (fieldOutcome); the
// two raise each regression once, by its event id (FieldEventID).
type FieldCheck struct {
	Store   FieldCheckStore
	Field   FieldSource
	BaseURL string
	Now     func() time.Time
	Log     *slog.Logger
}

// ScheduleOnce enqueues the check of every site with field data due at now, one a UTC day each,
// in batches, and answers how many it enqueued.
func (c *FieldCheck) ScheduleOnce(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for {
		n, err := c.Store.EnqueueDueField(ctx, now, 100)
		total += n
		if err != nil || n < 100 {
			return total, err
		}
	}
}

// Work checks one site: the field-only regressions on phones of the whole site, its monitored
// pages and the pages of its slowest interactions, as the beacon's days show them now; what
// the lab confirmed in the site's latest completed scan of those days is not field-only. Each
// regression becomes its own field.regression event, planned to the channels that receive it;
// one planned before (by a scan's alerts, a retry or yesterday's check) is not planned again.
func (c *FieldCheck) Work(ctx context.Context, _ store.Job, args store.FieldJob) error {
	target, err := c.Store.CruxTarget(ctx, args.SiteID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // the site was deleted
	}
	if err != nil {
		return err
	}
	site, now := target.Site, c.Now()
	labSaw, err := c.labSaw(ctx, site, now)
	if err != nil {
		return err
	}
	pages := discover.MonitoredPages(target)
	slow, err := c.Field.SlowInteractionsOf(ctx, site.ID, store.FieldQuery{Device: store.FieldPhone, From: now.Add(-fieldBeaconFor)}, fieldPages)
	if err != nil {
		return err
	}
	for _, in := range slow {
		if in.Page != "" && len(pages) < 2*fieldPages && !slices.Contains(pages, in.Page) {
			pages = append(pages, in.Page)
		}
	}
	found, err := fieldOnlyOf(ctx, c.Field, site.ID, pages, labSaw, time.Time{}, now)
	if err != nil || len(found) == 0 {
		return err
	}
	ws, err := c.Store.Workspace(ctx, site.UserID, site.WorkspaceID)
	if err != nil {
		return err
	}
	channels, err := c.Store.WorkspaceChannels(ctx, site.WorkspaceID)
	if err != nil {
		return err
	}
	e := Event{Type: EventFieldRegression, CreatedAt: now.UTC(), Workspace: EventRef{ID: ws.ID, Name: ws.Name},
		Site: EventSite{ID: site.ID, Name: site.Name, Domain: site.Domain}, Scan: EventScan{URL: c.BaseURL + "/sites/" + site.ID},
		Data: EventDetail{Regressions: []analysis.Regression{}, Changes: []EventChange{}, Violations: []analysis.Violation{}, FieldOnly: found}}
	ds := Route(site.WorkspaceID, fieldEvents([]Event{e}, site.ID), channels)
	if len(ds) == 0 {
		return nil
	}
	recs := make([]store.Delivery, len(ds))
	jobs := make([]store.JobArgs, len(ds))
	for i, d := range ds {
		recs[i] = store.Delivery{ID: store.NewID(), ChannelID: d.ChannelID, EventID: d.Event.ID, EventType: d.Event.Type, State: store.DeliveryPending, CreatedAt: now}
		jobs[i] = d
	}
	n, err := c.Store.PlanDeliveries(ctx, site.WorkspaceID, recs, jobs, now)
	if n > 0 {
		c.Log.Info("field check: field-only regressions alerted", "site", site.ID, "deliveries", n)
	}
	return err
}

// labSaw marks what the lab confirmed in the site's latest completed scan, when it completed
// within the days a field-only regression is judged on (analysis.FieldRule.RecentDays, and the
// day before): page URL + " " + metric, and " " + metric for the whole site.
func (c *FieldCheck) labSaw(ctx context.Context, site store.Site, now time.Time) (map[string]bool, error) {
	saw := map[string]bool{}
	scan, err := c.Store.LatestCompletedScan(ctx, site.UserID, site.ID)
	if errors.Is(err, store.ErrNotFound) {
		return saw, nil
	}
	if err != nil {
		return nil, err
	}
	if scan.CompletedAt == nil || scan.CompletedAt.Before(now.AddDate(0, 0, -analysis.DefaultFieldRule.RecentDays-1)) {
		return saw, nil
	}
	pairs, err := c.Store.PreviousPairs(ctx, site.UserID, scan.ID)
	if err != nil || pairs.From == nil {
		return saw, err
	}
	urls := map[string]string{}
	before := make([]store.PageResult, 0, len(pairs.Pairs))
	after := make([]store.PageResult, 0, len(pairs.Pairs))
	for _, p := range pairs.Pairs {
		before, after = append(before, p.Before), append(after, p.After)
		urls[p.After.PagePath] = p.After.PageURL
	}
	for _, r := range analysis.Regressions(before, after) {
		saw[urls[r.PagePath]+" "+r.Metric], saw[" "+r.Metric] = true, true
	}
	return saw, nil
}

// FieldEventID is the id of the field.regression event of one regression of a site: the same
// whoever finds it (a scan's alerts, the daily check, a retry of either) and on every day it
// lasts (analysis.FieldRegression.Since names it), so a channel's delivery of it is planned
// once (deliveries are unique by channel and event id).
func FieldEventID(siteID string, r analysis.FieldRegression) string {
	h := sha256.Sum256([]byte(string(r.Source) + "\x00" + r.Page + "\x00" + r.Metric + "\x00" + string(r.Device) + "\x00" + r.Since.UTC().Format(time.DateOnly)))
	return "evt_field_" + siteID + "_" + hex.EncodeToString(h[:8])
}

// fieldEvents splits each field.regression event of events into one per regression, with the
// regression's own id (FieldEventID); other events pass as they are.
func fieldEvents(events []Event, siteID string) []Event {
	var out []Event
	for _, e := range events {
		if e.Type != EventFieldRegression {
			out = append(out, e)
			continue
		}
		for _, r := range e.Data.FieldOnly {
			one := e
			one.ID, one.Data.FieldOnly = FieldEventID(siteID, r), []analysis.FieldRegression{r}
			out = append(out, one)
		}
	}
	return out
}
