package notify

import (
	"context"
	"errors"
	"time"

	"sitepulse/store"
)

// Job kinds of alerts: planning a finished scan's deliveries (the store enqueues it when a scan
// fails, CompleteScan through AfterScan when one completes), and one delivery.
const (
	KindAlerts   = store.KindAlerts
	KindDelivery = "delivery"
)

// DeliveryWorkers is how many deliveries one process sends at once, and WorkspaceDeliveries
// how many of them may be one workspace's (KindWorker.PerWorkspace): a workspace whose channels
// point at slow receivers holds at most that many of a process's workers, each for at most
// DeliveryTimeout, and the other workspaces' alerts go out on the rest.
const (
	DeliveryWorkers     = 4
	WorkspaceDeliveries = 2
)

// AlertsJob plans the alerts of a finished scan.
type AlertsJob = store.AlertsJob

// Kind makes a Dispatch the args of a `delivery` job.
func (Dispatch) Kind() string { return KindDelivery }

// MaxAttempts of a delivery: Next's 24-hour window is what gives a delivery up (attempts are at
// least 10 s apart), so the job's own bound only stops a runaway.
func (Dispatch) MaxAttempts() int { return 10000 }

// AlertsStore is what planning reads and writes: the scan and its site, what Plan reads, and
// the deliveries and their jobs, stored in one transaction.
type AlertsStore interface {
	ScanForJob(ctx context.Context, scanID string) (store.Scan, store.Site, error)
	PlanDeliveries(ctx context.Context, workspaceID string, ds []store.Delivery, jobs []store.JobArgs, now time.Time) (int, error)
}

// Alerts is the `alerts` job's worker.
type Alerts struct {
	Store   AlertsStore
	Planner *Planner
}

// Work plans a finished scan's deliveries: the events Plan computes, one pending delivery row
// and one `delivery` job per (event, channel), stored together. Event ids are the scan's and the
// event type's, so a retried planning job finds its rows and enqueues nothing twice. A scan
// deleted meanwhile has nothing to say.
func (a *Alerts) Work(ctx context.Context, _ store.Job, args AlertsJob) error {
	scan, site, err := a.Store.ScanForJob(ctx, args.ScanID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	ds, err := a.Planner.Plan(ctx, site, scan)
	if err != nil || len(ds) == 0 {
		return err
	}
	now := a.Planner.Now()
	recs := make([]store.Delivery, len(ds))
	jobs := make([]store.JobArgs, len(ds))
	for i, d := range ds {
		recs[i] = store.Delivery{ID: store.NewID(), ChannelID: d.ChannelID, EventID: d.Event.ID, EventType: d.Event.Type,
			State: store.DeliveryPending, CreatedAt: now}
		jobs[i] = d
	}
	_, err = a.Store.PlanDeliveries(ctx, site.WorkspaceID, recs, jobs, now)
	return err
}

// retryAt is a delivery's error that asks the pool to try again at a time (Next's: the
// receiver's Retry-After or the backoff), not at the pool's own backoff.
type retryAt struct {
	at     time.Time
	reason string
}

func (r *retryAt) Error() string      { return r.reason }
func (r *retryAt) RetryAt() time.Time { return r.at }

// Work is the `delivery` job's worker: one Attempt, the job's attempts counted from the time the
// delivery was planned; a pending delivery is retried at the time Next answered.
func (dl *Deliverer) Work(ctx context.Context, job store.Job, d Dispatch) error {
	next, err := dl.Attempt(ctx, d, max(job.Attempt-job.Snoozes(), 1), job.CreatedAt)
	if err != nil {
		return err
	}
	if next != nil {
		return &retryAt{at: *next, reason: "delivery " + d.Event.ID + " pending: the receiver was not reached or asked to wait"}
	}
	return nil
}
