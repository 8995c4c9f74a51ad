package crux

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"sitepulse/scanner"
	"sitepulse/scanner/discover"
	"sitepulse/store"
)

// Store is what the refresh needs of the store.
type Store interface {
	EnqueueDueCrux(ctx context.Context, now time.Time, every time.Duration, limit int) (int, error)
	CruxTarget(ctx context.Context, siteID string) (store.CruxTarget, error)
	SaveCrux(ctx context.Context, siteID string, rec store.CruxRecord, now time.Time) error
	CruxFetchesOf(ctx context.Context, siteID string) ([]store.CruxFetch, error)
}

// Refresher is the worker of store.KindCrux (registered in main with scanner.Work) and its
// weekly schedule (ScheduleOnce, a pass of the pool's scheduler).
type Refresher struct {
	Store Store
	// ClientFor is the client that queries a site's history: the demo site's answers from the
	// double, every other site's from the API with PAGESPEED_API_KEY; nil skips the site (no
	// key: CrUX history is off).
	ClientFor func(site store.Site) *Client
	Now       func() time.Time
	Log       *slog.Logger
}

// Devices are the form factors a refresh asks for, in order.
var Devices = []store.FieldDevice{store.FieldPhone, store.FieldDesktop}

// scheduleBatch bounds the sites one schedule pass claims, so one statement stays short.
const scheduleBatch = 100

// ScheduleOnce enqueues the refresh of every site due at now, once a week each, in batches,
// and answers how many it enqueued.
func (r *Refresher) ScheduleOnce(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for {
		n, err := r.Store.EnqueueDueCrux(ctx, now, store.CruxEvery, scheduleBatch)
		total += n
		if err != nil || n < scheduleBatch {
			if total > 0 {
				r.Log.Info("crux: weekly refreshes enqueued", "sites", total)
			}
			return total, err
		}
	}
}

// Work refreshes one site: its origin and each monitored page (saved paths, else the pages of
// its latest completed scan), phone and desktop. Each answer is stored as it arrives; a retry
// skips the targets this job already stored, so 429s and 5xx cost only what failed. A 429 or
// 5xx retries the job with the pool's backoff (the API's Retry-After when it gives one);
// CRUX_DAILY_REQUESTS spent snoozes it to the next day; a refused key logs why and waits for
// next week.
func (r *Refresher) Work(ctx context.Context, job store.Job, args store.CruxJob) error {
	target, err := r.Store.CruxTarget(ctx, args.SiteID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // the site was deleted
	}
	if err != nil {
		return err
	}
	client := r.ClientFor(target.Site)
	if client == nil {
		return nil
	}
	done := map[string]bool{}
	fetches, err := r.Store.CruxFetchesOf(ctx, args.SiteID)
	if err != nil {
		return err
	}
	for _, f := range fetches {
		if !f.FetchedAt.Before(job.CreatedAt) {
			done[f.Page+" "+string(f.Device)] = true
		}
	}
	origin := discover.SiteOrigin(target.Site.Domain)
	pages := []string{""}
	for _, p := range discover.MonitoredPages(target) {
		pages = append(pages, p)
	}
	stored := 0
	for _, page := range pages {
		for _, device := range Devices {
			if done[page+" "+string(device)] {
				continue
			}
			rec, err := client.History(ctx, Query{Origin: origin, Page: page, Device: device})
			var spent *BudgetSpent
			var api *APIError
			switch {
			case errors.As(err, &spent):
				return &scanner.Snooze{Until: spent.Until, Reason: err.Error()}
			case errors.As(err, &api) && api.KeyRefused():
				r.Log.Error("crux: the CrUX API refused the key; enable the Chrome UX Report API on PAGESPEED_API_KEY's Google Cloud project (the same key serves PageSpeed Insights and CrUX)",
					"site", args.SiteID, "err", err)
				return nil
			case errors.As(err, &api) && !api.Temporary():
				r.Log.Warn("crux: the CrUX API refused a query; skipped until next week", "site", args.SiteID, "page", page, "device", device, "err", err)
				continue
			case errors.As(err, &api) && api.Status == http.StatusTooManyRequests:
				// The quota is per minute: try again in one, or when the API said.
				return &retryLater{err: fmt.Errorf("crux refresh of site %s: %w", args.SiteID, err), at: later(api.After, r.Now().Add(time.Minute))}
			case err != nil:
				return fmt.Errorf("crux refresh of site %s: %w", args.SiteID, err)
			}
			if err := r.Store.SaveCrux(ctx, args.SiteID, rec, r.Now()); errors.Is(err, store.ErrNotFound) {
				return nil // deleted meanwhile
			} else if err != nil {
				return err
			}
			stored++
		}
	}
	r.Log.Info("crux: history refreshed", "site", args.SiteID, "records", stored)
	return nil
}

// retryLater is an error whose job is retried at a time of its own (the pool's RetryAt rule).
type retryLater struct {
	err error
	at  time.Time
}

func (e *retryLater) Error() string      { return e.err.Error() }
func (e *retryLater) Unwrap() error      { return e.err }
func (e *retryLater) RetryAt() time.Time { return e.at }

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
