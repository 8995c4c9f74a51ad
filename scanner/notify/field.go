package notify

import (
	"context"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// FieldSource is what the alerts read of a site's field data (DESIGN §19), as the system: its
// CrUX history, beacon days and slowest interactions (store.CruxReads, store.BeaconReads).
type FieldSource interface {
	CruxSeriesOf(ctx context.Context, siteID string, q store.FieldQuery) ([]store.FieldPoint, error)
	BeaconSeriesOf(ctx context.Context, siteID string, q store.FieldQuery) ([]store.FieldPoint, error)
	SlowInteractionsOf(ctx context.Context, siteID string, q store.FieldQuery, limit int) ([]store.Interaction, error)
}

// Bounds of the field reads of one scan's alerts.
const (
	fieldPages     = 10 // pages checked for field-only regressions, besides the whole site
	fieldVerdicts  = 6  // regressions given a field status
	fieldBeaconFor = store.FieldCheckDays * 24 * time.Hour
	fieldCruxFor   = 12 * 7 * 24 * time.Hour // CruxFieldRule's 6 periods, and room for gaps
)

// fieldOutcome fills in what the field says of a completed scan: the field status of its
// regressions when a publish started it, and the field-only regressions on phones (the whole
// site and the scan's pages) that are new since the previous completed scan (previous; zero for
// the first): a crossing already there then was alerted then, so a lasting one alerts once.
func fieldOutcome(ctx context.Context, f FieldSource, o *Outcome, previous, now time.Time) error {
	if f == nil || o.Scan.Status != store.StatusComplete {
		return nil
	}
	var regs []analysis.Regression
	if o.Previous != nil {
		regs = analysis.Regressions(o.Previous, o.Latest)
	}
	urls := map[string]string{}
	var pages []string
	for _, r := range o.Latest {
		if _, ok := urls[r.PagePath]; !ok && r.PageURL != "" {
			urls[r.PagePath] = r.PageURL
			if len(pages) < fieldPages {
				pages = append(pages, r.PageURL)
			}
		}
	}
	labSaw := map[string]bool{}
	for _, r := range regs {
		labSaw[urls[r.PagePath]+" "+r.Metric], labSaw[" "+r.Metric] = true, true
		if o.Publish == nil || len(o.Field) >= fieldVerdicts {
			continue
		}
		q := store.FieldQuery{Page: urls[r.PagePath], Device: analysis.DeviceOf(r.Strategy), Metric: r.Metric, From: o.Publish.PublishedOn.Add(-fieldBeaconFor)}
		bd, err := f.BeaconSeriesOf(ctx, o.Site.ID, q)
		if err != nil {
			return err
		}
		q.From = o.Publish.PublishedOn.Add(-10 * 7 * 24 * time.Hour)
		cd, err := f.CruxSeriesOf(ctx, o.Site.ID, q)
		if err != nil {
			return err
		}
		for _, v := range []analysis.FieldVerdict{
			analysis.FieldOfBeacon(r.Metric, q.Device, o.Publish.PublishedOn, bd, now, analysis.DefaultFieldRule),
			analysis.FieldOfCrux(r.Metric, q.Device, o.Publish.PublishedOn, cd, now, analysis.DefaultFieldRule),
		} {
			if v.Status != analysis.FieldNoData {
				o.Field = append(o.Field, v)
			}
		}
	}
	var err error
	o.FieldOnly, err = fieldOnlyOf(ctx, f, o.Site.ID, pages, labSaw, previous, now)
	return err
}

// fieldOnlyOf finds the field-only regressions on phones of a site's whole site and pages as the
// beacon's days up to now show them (analysis.FieldOnly, the slowest interaction named), or,
// for a page the beacon has no days of, CrUX's weekly periods (analysis.CruxFieldRule);
// labSaw marks what the lab saw (page URL + " " + metric; " " + metric for the whole site).
// previous, when not zero, leaves out those the days ending by then already showed. The
// scan's alerts and the daily field check (FieldCheck) both ask it.
func fieldOnlyOf(ctx context.Context, f FieldSource, siteID string, pages []string, labSaw map[string]bool, previous, now time.Time) ([]analysis.FieldRegression, error) {
	var out []analysis.FieldRegression
	for _, page := range append([]string{""}, pages...) {
		rule := analysis.DefaultFieldRule
		days, err := f.BeaconSeriesOf(ctx, siteID, store.FieldQuery{Page: page, Device: store.FieldPhone, From: now.Add(-fieldBeaconFor)})
		if err == nil && len(days) == 0 {
			rule = analysis.CruxFieldRule
			days, err = f.CruxSeriesOf(ctx, siteID, store.FieldQuery{Page: page, Device: store.FieldPhone, From: now.Add(-fieldCruxFor)})
		}
		if err != nil || len(days) == 0 {
			if err != nil {
				return nil, err
			}
			continue
		}
		var then []store.FieldPoint // the days as the previous scan saw them
		for _, d := range days {
			if d.End.Before(previous) || d.End.Equal(previous) {
				then = append(then, d)
			}
		}
		var slow []store.Interaction
		if rule == analysis.DefaultFieldRule {
			if slow, err = f.SlowInteractionsOf(ctx, siteID, store.FieldQuery{Page: page, Device: store.FieldPhone}, 5); err != nil {
				return nil, err
			}
		}
		for _, m := range store.FieldMetrics {
			fr, ok := analysis.FieldOnly(m, page, store.FieldPhone, days, labSaw[page+" "+m], slow, rule)
			if !ok {
				continue
			}
			if _, was := analysis.FieldOnly(m, page, store.FieldPhone, then, false, slow, rule); was && !previous.IsZero() {
				continue
			}
			out = append(out, fr)
		}
	}
	return out, nil
}
