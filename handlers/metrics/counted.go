package metrics

import (
	"context"
	"time"

	"sitepulse/scanner"
	"sitepulse/scanner/notify"
	"sitepulse/store"
)

// CountedScans is the pool's store, counting in the metrics the scans this process finishes
// and the audits it records, as their writes succeed.
type CountedScans struct {
	scanner.Store
	M *Metrics
}

func (c CountedScans) CompleteScan(ctx context.Context, l store.Lease, scores store.ScanScores, now time.Time, then ...store.JobArgs) error {
	err := c.Store.CompleteScan(ctx, l, scores, now, then...)
	if err == nil {
		c.M.Scans.Add("completed")
	}
	return err
}

func (c CountedScans) FailScan(ctx context.Context, l store.Lease, reason string, now time.Time) error {
	err := c.Store.FailScan(ctx, l, reason, now)
	if err == nil {
		c.M.Scans.Add("failed")
	}
	return err
}

func (c CountedScans) ExpireScan(ctx context.Context, scanID, reason string, now time.Time) error {
	err := c.Store.ExpireScan(ctx, scanID, reason, now)
	if err == nil {
		c.M.Scans.Add("failed")
	}
	return err
}

func (c CountedScans) SavePageResult(ctx context.Context, l store.Lease, r store.PageResult) error {
	err := c.Store.SavePageResult(ctx, l, r)
	if err == nil {
		c.M.Audits.Add("ok")
	}
	return err
}

func (c CountedScans) SavePageError(ctx context.Context, l store.Lease, e store.PageError) error {
	err := c.Store.SavePageError(ctx, l, e)
	if err == nil {
		c.M.Audits.Add("failed")
	}
	return err
}

// CountedDeliveries is the deliverer's store, counting each delivery attempt it records by the
// state it left the delivery in.
type CountedDeliveries struct {
	notify.DelivererStore
	M *Metrics
}

func (c CountedDeliveries) RecordDelivery(ctx context.Context, workspaceID string, d store.Delivery) error {
	err := c.DelivererStore.RecordDelivery(ctx, workspaceID, d)
	if err == nil && (d.State == store.DeliveryDelivered || d.State == store.DeliveryPending || d.State == store.DeliveryFailed) {
		c.M.Deliveries.Add(d.State)
	}
	return err
}
