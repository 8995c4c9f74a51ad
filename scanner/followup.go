package scanner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"sitepulse/store"
)

// FollowUps is the worker of store.KindFollowUp (registered in main with scanner.Work): the
// site was published while its scan ran, so once that scan has ended it enqueues one more, a
// webhook scan of both strategies that audits what the latest publish made. While the site
// still has a scan in flight it hands over to a follow-up Wait later (EnqueueFollowUp again:
// one a publish queued meanwhile is joined, a scan still queued covers it) rather than snooze,
// so a site never holds two waiting follow-ups. A site deleted meanwhile has nothing to scan.
type FollowUps struct {
	Store interface {
		EnqueueScan(ctx context.Context, s store.Scan, kind string, runAt time.Time) error
		EnqueueFollowUp(ctx context.Context, siteID string, runAt time.Time) (store.FollowUp, error)
	}
	Now func() time.Time
	Log *slog.Logger
	// Wait is how long a follow-up waits before it looks again whether the site's scan in
	// flight has ended; 0 means 5 s.
	Wait time.Duration
}

// Work runs one follow-up job.
func (f *FollowUps) Work(ctx context.Context, job store.Job, args store.FollowUpJob) error {
	now := f.Now()
	scan := store.Scan{ID: store.NewID(), SiteID: args.SiteID, Strategy: store.StrategyBoth, Trigger: store.TriggerWebhook, CreatedAt: now}
	err := f.Store.EnqueueScan(ctx, scan, store.KindScan, now)
	switch {
	case errors.Is(err, store.ErrScanActive):
		_, err := f.Store.EnqueueFollowUp(ctx, args.SiteID, now.Add(cmp.Or(f.Wait, 5*time.Second)))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	case errors.Is(err, store.ErrNotFound):
		f.Log.Info("follow-up: the site was deleted; nothing to scan", "site", args.SiteID)
		return nil
	case err != nil:
		return fmt.Errorf("enqueue the follow-up scan: %w", err)
	}
	f.Log.Info("follow-up: the publish made during the last scan is audited now", "site", args.SiteID, "scan", scan.ID)
	return nil
}
