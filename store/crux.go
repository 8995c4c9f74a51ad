package store

import (
	"context"
	"time"
)

// The CrUX history's writing side (DESIGN §19; issue 45 item 1): a site's weekly refresh from
// the CrUX History API, on the queue, stored as FieldPoints of Source FieldCrUX, which
// CruxReads answers (store/field.go).

// KindCrux is the job that refreshes one site's CrUX history: its origin and each monitored
// page, phone and desktop. EnqueueDueCrux enqueues one per site a week.
const KindCrux = "crux"

// CruxEvery is how often a site's CrUX history is refreshed: the API publishes one collection
// period a week.
const CruxEvery = 7 * 24 * time.Hour

// CruxJob is the args of a KindCrux job.
type CruxJob struct {
	SiteID      string `json:"siteId"`
	WorkspaceID string `json:"workspaceId,omitempty"`
}

// Kind is KindCrux.
func (CruxJob) Kind() string { return KindCrux }

// Workspace is the site's workspace: its jobs take turns with other workspaces' (ClaimJob).
func (j CruxJob) Workspace() string { return j.WorkspaceID }

// MaxAttempts gives a refresh room for a few 429s and 5xx before it waits for next week.
func (CruxJob) MaxAttempts() int { return 6 }

// CruxRecord is what one query of the CrUX History API answered for one target of a site (its
// origin, Page "", or one page URL) on one device: Found false for the API's 404 (not enough
// Chrome traffic: "no field data"), else its points, one per metric and collection period, with
// P75 nil for a period the API marks ineligible ("NaN" or null).
type CruxRecord struct {
	Page   string
	Device FieldDevice
	Found  bool
	Points []FieldPoint
}

// CruxFetch is the last answer the CrUX History API gave for one target of a site on one device:
// when, and whether it had data (Found false: the API's 404, "no field data"). Periods is how
// many collection periods that answer carried.
type CruxFetch struct {
	Page      string
	Device    FieldDevice
	FetchedAt time.Time
	Found     bool
	Periods   int
}

// CruxTarget is what a site's refresh queries: the site, and the URLs of its monitored pages
// (its saved paths, else the pages of its latest completed scan), origin not included.
type CruxTarget struct {
	Site  Site
	Pages []string
}

// CruxHistory keeps sites' CrUX history. Its methods serve the system (the refresh job, the
// scheduler, the pruner), except CruxFetches, which is scoped as CruxReads is.
type CruxHistory interface {
	// EnqueueDueCrux enqueues a KindCrux job runnable at now for each site whose refresh is due
	// (never refreshed, or due at or before now), at most limit, and moves each one's next
	// refresh to now + every, in one transaction: however many processes ask, a due site gets
	// one job. It answers how many it enqueued.
	EnqueueDueCrux(ctx context.Context, now time.Time, every time.Duration, limit int) (int, error)
	// CruxTarget reads what a site's refresh queries; ErrNotFound when the site is gone.
	CruxTarget(ctx context.Context, siteID string) (CruxTarget, error)
	// SaveCrux stores one record of a site at now: its points upserted on (page, device,
	// metric, period start), so a refresh a week later appends the new period and updates the
	// ones the API revised without duplicates, and the target's CruxFetch replaced. A record
	// not Found keeps the points stored before (the API may lack data for a week). ErrNotFound
	// when the site is gone.
	SaveCrux(ctx context.Context, siteID string, rec CruxRecord, now time.Time) error
	// CruxFetches lists a site's last answers by target and device (origin first, then pages
	// by URL; phone before desktop); ErrNotFound when the site is not the user's. A site never
	// refreshed has none.
	CruxFetches(ctx context.Context, userID, siteID string) ([]CruxFetch, error)
	// CruxFetchesOf is CruxFetches for the system.
	CruxFetchesOf(ctx context.Context, siteID string) ([]CruxFetch, error)
	// PruneCrux deletes up to limit CrUX points whose period ended more than their workspace's
	// RetentionDays before now (never in a workspace that keeps history forever, 0), and
	// answers how many.
	PruneCrux(ctx context.Context, now time.Time, limit int) (int, error)
}

// CruxKeyHint says where the key of the CrUX history is set, for every surface that shows
// field data or its absence (the configuration's -h and docs/field.md say the same).
const CruxKeyHint = "CrUX history is fetched with the service's PAGESPEED_API_KEY: the same Google API key serves PageSpeed Insights and CrUX once the Chrome UX Report API is enabled on its Google Cloud project."
