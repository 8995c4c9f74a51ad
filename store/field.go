package store

import (
	"context"
	"time"
)

// Field data (DESIGN §19): what real users measured, beside the lab. Two sources feed it: the
// CrUX History API (weekly p75 per origin and page and form factor) and SitePulse's own beacon
// (daily histograms per site, page and device class). Both are read as FieldPoints, so the
// analysis that judges them (scanner/analysis) and every surface that shows them take one shape.

// FieldSource says where a field figure came from.
type FieldSource string

const (
	FieldCrUX   FieldSource = "crux"   // the CrUX History API: a 28-day window, one point a week
	FieldBeacon FieldSource = "beacon" // SitePulse's beacon: one point a day
)

// FieldDevice is the device class of field data: CrUX's form factor, or the beacon's class.
type FieldDevice string

const (
	FieldPhone   FieldDevice = "phone"
	FieldDesktop FieldDevice = "desktop"
)

// Valid reports whether d is a device class SitePulse keeps.
func (d FieldDevice) Valid() bool { return d == FieldPhone || d == FieldDesktop }

// FieldMetrics are the metrics field data carries, by their names in analysis.Metrics.
var FieldMetrics = []string{"lcp", "inp", "cls", "fcp", "ttfb"}

// FieldBin is one bin of a field histogram: the share (CrUX: density 0..1) or the count (beacon)
// of samples in [Start, End); End 0 means open-ended.
type FieldBin struct {
	Start, End float64
	Count      float64
}

// FieldPoint is one period's figure of one metric on one device: a CrUX collection period, or a
// beacon day (Start the day at 00:00 UTC, End the next day).
type FieldPoint struct {
	Source FieldSource
	// Page is the page's URL as SitePulse monitors it (scheme, host and path; never a query
	// or a fragment), or "" for the whole origin (CrUX origin records; the beacon's site-wide
	// figure).
	Page   string
	Device FieldDevice
	Metric string
	Start  time.Time
	End    time.Time
	// P75 is nil for a gap: CrUX's "NaN" or null, a beacon day without samples.
	P75 *float64
	// Samples is how many samples the beacon kept that day; 0 for CrUX, which does not say.
	Samples   int64
	Histogram []FieldBin
}

// FieldQuery selects field points of one site: Page "" the origin (or site-wide), Device "" both,
// Metric "" every field metric, From <= Start < To (zero bounds: unbounded). Oldest first.
type FieldQuery struct {
	Page     string
	Device   FieldDevice
	Metric   string
	From, To time.Time
}

// Interaction is one of a page's slowest interactions the beacon saw (INP attribution): the
// element's selector and the event type, how many times it was the page's INP, and the p75 of
// those INP values and of their phases.
type Interaction struct {
	Page      string
	Device    FieldDevice
	Selector  string
	EventType string
	Count     int64
	P75       float64
	// The p75 of the INP phases, web-vitals' attribution names.
	InputDelay, ProcessingDuration, PresentationDelay float64
	LastSeen                                          time.Time
}

// FieldReads are both halves of a site's field data, as every surface reads them (the site,
// scan and page views, MCP get_field_data, the field budget, the alerts).
type FieldReads interface {
	CruxReads
	BeaconReads
}

// The field's read windows: CrUX keeps up to 40 weekly periods; the beacon's days are read over
// two months, enough for a week before a publish and the weeks after it.
const (
	FieldCruxSpan   = 40 * 7 * 24 * time.Hour
	FieldBeaconSpan = 60 * 24 * time.Hour
)

// CruxReads reads a site's CrUX history. The user's form answers ErrNotFound for a site of a
// workspace the user is not a member of; the Of form serves the system (the pipeline, alerts).
type CruxReads interface {
	CruxSeries(ctx context.Context, userID, siteID string, q FieldQuery) ([]FieldPoint, error)
	CruxSeriesOf(ctx context.Context, siteID string, q FieldQuery) ([]FieldPoint, error)
}

// BeaconReads reads a site's beacon figures: daily points (the p75 exact to a histogram bin)
// and the slowest interactions, by count of times they were the INP, then by P75. Scoped as
// CruxReads is.
type BeaconReads interface {
	BeaconSeries(ctx context.Context, userID, siteID string, q FieldQuery) ([]FieldPoint, error)
	BeaconSeriesOf(ctx context.Context, siteID string, q FieldQuery) ([]FieldPoint, error)
	SlowInteractions(ctx context.Context, userID, siteID string, q FieldQuery, limit int) ([]Interaction, error)
	SlowInteractionsOf(ctx context.Context, siteID string, q FieldQuery, limit int) ([]Interaction, error)
}
