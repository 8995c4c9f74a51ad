package store

import (
	"context"
	"time"
)

// KindField is the daily field check of one site (issue 45 item 4): its field-only regressions
// judged on the beacon's days, so a site with real users and no scan for days still gets its
// field.regression alert. EnqueueDueField enqueues one per site a UTC day, for the sites with
// beacon days in the last FieldCheckDays or CrUX history.
const KindField = "field"

// FieldCheckDays is how far back a site's beacon days make it due for the daily check: the
// window the field-only rule reads.
const FieldCheckDays = 30

// FieldJob is the args of a KindField job.
type FieldJob struct {
	SiteID      string `json:"siteId"`
	WorkspaceID string `json:"workspaceId,omitempty"`
}

// Kind is KindField.
func (FieldJob) Kind() string { return KindField }

// Workspace is the site's workspace: its jobs take turns with other workspaces' (ClaimJob).
func (j FieldJob) Workspace() string { return j.WorkspaceID }

// MaxAttempts: a check that keeps failing waits for the next day's.
func (FieldJob) MaxAttempts() int { return 3 }

// FieldChecks schedules the daily field check.
type FieldChecks interface {
	// EnqueueDueField enqueues a KindField job runnable at now for each site with field data
	// (beacon days since FieldCheckDays before now, or CrUX points) whose check is due (never
	// checked, or due at or before now), at most limit, and moves each one's next check to the
	// next UTC midnight after now, in one transaction: however many processes ask, a site gets
	// one job a day. It answers how many it enqueued.
	EnqueueDueField(ctx context.Context, now time.Time, limit int) (int, error)
}

// NextFieldCheck is when a site checked at now is next due: the next UTC midnight.
func NextFieldCheck(now time.Time) time.Time { return BeaconDay(now).AddDate(0, 0, 1) }
