package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// The beacon's store (DESIGN §19, issue 45): a site's public beacon id, and what the ingest
// keeps of the beacons it accepted. Nothing here identifies a visitor: the rows are counts in
// fixed histogram bins per site, day, page path, device class and metric, and counts of the
// slowest interactions' selectors.

// BeaconBinRatio is the width of one histogram bin: each bin's end is 1.1 times its start, so a
// p75 read from the bins is within 10% of the samples' own (5% of the bin's middle).
const BeaconBinRatio = 1.1

// beaconScale is one metric's histogram: bin 0 holds [0, Min), bin i holds
// [Min·1.1^(i-1), Min·1.1^i), the last bin ends at Max or beyond (values above Max are
// refused by the ingest, so it is never open in practice).
type beaconScale struct{ Min, Max float64 }

// beaconScales are the plausible ranges of each field metric: milliseconds for the timings,
// the unitless score for CLS on its own scale. A beacon outside its metric's range is refused.
var beaconScales = map[string]beaconScale{
	"lcp":  {Min: 1, Max: 120_000},
	"fcp":  {Min: 1, Max: 120_000},
	"ttfb": {Min: 1, Max: 120_000},
	"inp":  {Min: 1, Max: 60_000},
	"cls":  {Min: 0.0001, Max: 100},
}

// BeaconPhaseMetric is the scale the INP phases (input delay, processing, presentation) share.
const BeaconPhaseMetric = "inp"

// BeaconRange is the range [0, max] a metric's values must fall in; ok false for a metric the
// beacon does not keep.
func BeaconRange(metric string) (max float64, ok bool) {
	s, ok := beaconScales[metric]
	return s.Max, ok
}

// BeaconBins is how many bins a metric's histogram has; 0 for an unknown metric.
func BeaconBins(metric string) int {
	s, ok := beaconScales[metric]
	if !ok {
		return 0
	}
	return 1 + int(math.Ceil(math.Log(s.Max/s.Min)/math.Log(BeaconBinRatio)-1e-9))
}

// BeaconBin is the bin a value of metric falls in, -1 when the metric is unknown or the value is
// not finite or outside [0, max].
func BeaconBin(metric string, v float64) int {
	s, ok := beaconScales[metric]
	if !ok || math.IsNaN(v) || v < 0 || v > s.Max {
		return -1
	}
	if v < s.Min {
		return 0
	}
	i := 1 + int(math.Floor(math.Log(v/s.Min)/math.Log(BeaconBinRatio)))
	// Floating point may put a value on a bin's edge one bin off: settle it by the bounds.
	for i > 1 && v < s.Min*math.Pow(BeaconBinRatio, float64(i-1)) {
		i--
	}
	for v >= s.Min*math.Pow(BeaconBinRatio, float64(i)) {
		i++
	}
	if n := BeaconBins(metric); i >= n {
		i = n - 1
	}
	return i
}

// BeaconBinBounds is the range [start, end) of bin i of metric's histogram ([start, Max] for
// the last).
func BeaconBinBounds(metric string, i int) (start, end float64) {
	s := beaconScales[metric]
	if i <= 0 {
		return 0, s.Min
	}
	start, end = s.Min*math.Pow(BeaconBinRatio, float64(i-1)), s.Min*math.Pow(BeaconBinRatio, float64(i))
	return start, math.Min(end, s.Max) // the last bin ends at Max, which it holds
}

// BeaconP75 is the 75th percentile of a histogram of metric given as counts by bin (weighted
// counts: a sampled day's bins are scaled up by its sampling), exact to a bin: the bin that
// holds the nearest-rank 75th percentile sample, reported as its middle (geometric; bin 0's is
// half its end). ok is false when the histogram is empty.
func BeaconP75(metric string, counts map[int]float64) (p75 float64, ok bool) {
	var total float64
	bins := make([]int, 0, len(counts))
	for b, c := range counts {
		if c > 0 {
			total += c
			bins = append(bins, b)
		}
	}
	if total <= 0 {
		return 0, false
	}
	sort.Ints(bins)
	rank := math.Ceil(0.75*total - 1e-9)
	var seen float64
	for _, b := range bins {
		seen += counts[b]
		if seen >= rank-1e-9 {
			return beaconMiddle(metric, b), true
		}
	}
	return beaconMiddle(metric, bins[len(bins)-1]), true
}

// beaconMiddle is where in bin i a value is reported: the geometric middle of its bounds.
func beaconMiddle(metric string, i int) float64 {
	start, end := BeaconBinBounds(metric, i)
	if i <= 0 {
		return end / 2
	}
	return math.Sqrt(start * end)
}

// BeaconHistogram is counts by bin as FieldBins, by bin.
func BeaconHistogram(metric string, counts map[int]float64) []FieldBin {
	bins := make([]int, 0, len(counts))
	for b, c := range counts {
		if c > 0 {
			bins = append(bins, b)
		}
	}
	sort.Ints(bins)
	out := make([]FieldBin, len(bins))
	for i, b := range bins {
		start, end := BeaconBinBounds(metric, b)
		out[i] = FieldBin{Start: start, End: end, Count: counts[b]}
	}
	return out
}

// BeaconNavigations are the navigation types the beacon counts page views by: web-vitals'
// navigationType, and "soft" for a same-document navigation (history.pushState, popstate).
var BeaconNavigations = []string{"navigate", "reload", "back-forward", "back-forward-cache", "prerender", "restore", "soft"}

// BeaconNavMetric is the metric name page views are counted under in BeaconCount: its Bin is the
// index of the navigation type in BeaconNavigations.
const BeaconNavMetric = "nav"

// BeaconInteractionParts are what an interaction's histograms hold: the INP value and its three
// phases, all on the INP scale.
var BeaconInteractionParts = []string{"inp", "input", "processing", "presentation"}

// MaxBeaconInteractions bounds the interactions the store keeps per site, day, page and device:
// the ingest admits no new selector past it (the slowest list is a top list, not a log).
const MaxBeaconInteractions = 20

// BeaconSite is what the ingest knows of a site by its public id.
type BeaconSite struct {
	SiteID      string
	WorkspaceID string
	Domain      string
}

// BeaconCount adds to one bin of one histogram: Count scaled by the sampling of the day (a
// beacon kept 1 in 4 counts 4), Kept the beacons themselves.
type BeaconCount struct {
	SiteID string
	Day    time.Time // 00:00 UTC
	Path   string    // "" for the site-wide figure
	Device FieldDevice
	Metric string // a FieldMetrics name, or BeaconNavMetric
	Bin    int
	Count  float64
	Kept   int64
}

// BeaconInteractionCount adds to one bin of one part (BeaconInteractionParts) of a slow
// interaction's histograms.
type BeaconInteractionCount struct {
	SiteID    string
	Day       time.Time
	Path      string
	Device    FieldDevice
	Selector  string
	EventType string
	Part      string
	Bin       int
	Count     float64
	Seen      time.Time
}

// BeaconSeen adds to the beacons a site's ingest saw on a UTC day, kept or sampled away: the
// count BEACON_DAILY_CAP's sampling is decided on. It lives in the store so that every process
// of the service samples on the same count, and a restart starts from it.
type BeaconSeen struct {
	SiteID string
	Day    time.Time // 00:00 UTC
	Seen   int64
}

// BeaconBatch is what the ingest flushes at once.
type BeaconBatch struct {
	Counts       []BeaconCount
	Interactions []BeaconInteractionCount
	Seen         []BeaconSeen
}

// BeaconViews is how many page views of a kind the beacon counted on a page and device over a
// query's days (scaled by sampling).
type BeaconViews struct {
	Page       string
	Device     FieldDevice
	Navigation string
	Count      float64
}

// BeaconWrites is the beacon's side of the store: its key, its writes and its retention.
type BeaconWrites interface {
	// BeaconKey is the site's public beacon id, made on first ask; ErrNotFound unless userID
	// is an owner or editor of the site's workspace.
	BeaconKey(ctx context.Context, userID, siteID string) (string, error)
	// BeaconSiteByKey finds the site of a public beacon id (system: the ingest); ErrNotFound
	// for an unknown id.
	BeaconSiteByKey(ctx context.Context, publicID string) (BeaconSite, error)
	// AddBeacons adds a batch to the histograms and to the sites' days seen (system: the
	// ingest's flush), in one transaction; counts of a site deleted since are dropped. It
	// answers, for each site and day of b.Seen, the day's total seen by every process so far
	// (this batch included), in the same statement as the write.
	AddBeacons(ctx context.Context, b BeaconBatch) ([]BeaconSeen, error)
	// BeaconElementsOf lists the LCP elements and CLS largest-shift targets the beacon saw
	// (system; Page "" every page), most often seen first, at most limit (<= 0: 10).
	BeaconElementsOf(ctx context.Context, siteID string, q FieldQuery, limit int) ([]BeaconElement, error)
	// BeaconViewsOf counts page views by navigation type (system; Page "" site-wide).
	BeaconViewsOf(ctx context.Context, siteID string, q FieldQuery) ([]BeaconViews, error)
	// PruneBeacons deletes beacon days older than their workspace's RetentionDays before now
	// (none in a workspace that keeps forever), answering how many rows went.
	PruneBeacons(ctx context.Context, now time.Time) (int64, error)
}

// NewBeaconKey makes a public beacon id: 96 random bits, URL-safe. It is public (it is in the
// site's pages) and only names the site to the ingest; it grants nothing.
func NewBeaconKey() string {
	var b [12]byte
	rand.Read(b[:])
	return "b_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// ValidBeaconKey answers whether s has NewBeaconKey's shape.
func ValidBeaconKey(s string) bool {
	if len(s) != 18 || s[:2] != "b_" {
		return false
	}
	for _, c := range s[2:] {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// BeaconDay is the UTC day t falls in, at 00:00.
func BeaconDay(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// BeaconPoints turns summed rows into FieldPoints: one per (page, device, metric, day), with its
// histogram, p75 and kept samples. origin is the site's origin (pages are origin + path).
// Sorted oldest first, then by page, device and metric.
func BeaconPoints(origin string, rows []BeaconCount) []FieldPoint {
	type key struct {
		day          time.Time
		path, metric string
		device       FieldDevice
	}
	counts := map[key]map[int]float64{}
	kept := map[key]int64{}
	for _, r := range rows {
		k := key{r.Day.UTC(), r.Path, r.Metric, r.Device}
		if counts[k] == nil {
			counts[k] = map[int]float64{}
		}
		counts[k][r.Bin] += r.Count
		kept[k] += r.Kept
	}
	out := make([]FieldPoint, 0, len(counts))
	for k, c := range counts {
		p := FieldPoint{Source: FieldBeacon, Device: k.device, Metric: k.metric, Start: k.day, End: k.day.AddDate(0, 0, 1),
			Samples: kept[k], Histogram: BeaconHistogram(k.metric, c)}
		if k.path != "" {
			p.Page = origin + k.path
		}
		if v, ok := BeaconP75(k.metric, c); ok {
			p.P75 = &v
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start)
		}
		if a.Page != b.Page {
			return a.Page < b.Page
		}
		if a.Device != b.Device {
			return a.Device < b.Device
		}
		return a.Metric < b.Metric
	})
	return out
}

// BeaconSlowest turns summed interaction rows into the slowest interactions: by how many times
// each was the page's INP, then by P75, at most limit (limit <= 0: 10).
func BeaconSlowest(origin string, rows []BeaconInteractionCount, limit int) []Interaction {
	if limit <= 0 {
		limit = 10
	}
	type key struct {
		path, selector, event string
		device                FieldDevice
	}
	parts := map[key]map[string]map[int]float64{}
	seen := map[key]time.Time{}
	for _, r := range rows {
		k := key{r.Path, r.Selector, r.EventType, r.Device}
		if parts[k] == nil {
			parts[k] = map[string]map[int]float64{}
		}
		if parts[k][r.Part] == nil {
			parts[k][r.Part] = map[int]float64{}
		}
		parts[k][r.Part][r.Bin] += r.Count
		if r.Seen.After(seen[k]) {
			seen[k] = r.Seen.UTC()
		}
	}
	out := make([]Interaction, 0, len(parts))
	for k, p := range parts {
		var n float64
		for _, c := range p["inp"] {
			n += c
		}
		if n <= 0 {
			continue
		}
		it := Interaction{Selector: k.selector, EventType: k.event, Device: k.device, Count: int64(math.Round(n)), LastSeen: seen[k]}
		if k.path != "" {
			it.Page = origin + k.path
		}
		it.P75, _ = BeaconP75(BeaconPhaseMetric, p["inp"])
		it.InputDelay, _ = BeaconP75(BeaconPhaseMetric, p["input"])
		it.ProcessingDuration, _ = BeaconP75(BeaconPhaseMetric, p["processing"])
		it.PresentationDelay, _ = BeaconP75(BeaconPhaseMetric, p["presentation"])
		out = append(out, it)
	}
	return mostSeenFirst(out, limit, func(i Interaction) (int64, float64, []string) {
		return i.Count, i.P75, []string{i.Page, i.Selector, i.EventType, string(i.Device)}
	})
}

// mostSeenFirst orders a top list (the slowest interactions, the LCP and CLS elements): most
// often seen first, then the highest p75, then by its keys ascending, so the order is total and
// both stores answer alike; it keeps at most limit.
func mostSeenFirst[T any](list []T, limit int, rank func(T) (count int64, p75 float64, keys []string)) []T {
	slices.SortFunc(list, func(a, b T) int {
		ac, ap, ak := rank(a)
		bc, bp, bk := rank(b)
		return cmp.Or(cmp.Compare(bc, ac), cmp.Compare(bp, ap), slices.Compare(ak, bk))
	})
	return list[:min(len(list), limit)]
}

// BeaconPath is the path a FieldQuery's Page names on a site of origin: "" for the site-wide
// figure, ok false for a page of another origin.
func BeaconPath(origin, page string) (path string, ok bool) {
	if page == "" {
		return "", true
	}
	if len(page) > len(origin) && page[:len(origin)] == origin && page[len(origin)] == '/' {
		return page[len(origin):], true
	}
	return "", false
}

// SiteOrigin is the scheme and host a site's pages are on, as discover.SiteOrigin says it: the
// domain as https, or the domain itself when it already is an origin. FieldPoint.Page is it
// plus the path.
func SiteOrigin(domain string) string {
	d := strings.TrimRight(strings.TrimSpace(domain), "/")
	if strings.HasPrefix(d, "http://") || strings.HasPrefix(d, "https://") {
		return d
	}
	return "https://" + d
}

// BeaconViewsFrom turns summed BeaconNavMetric rows into page views by page, device and
// navigation type.
func BeaconViewsFrom(origin string, rows []BeaconCount) []BeaconViews {
	type key struct {
		path, nav string
		device    FieldDevice
	}
	sum := map[key]float64{}
	for _, r := range rows {
		if r.Bin >= 0 && r.Bin < len(BeaconNavigations) {
			sum[key{r.Path, BeaconNavigations[r.Bin], r.Device}] += r.Count
		}
	}
	out := make([]BeaconViews, 0, len(sum))
	for k, c := range sum {
		v := BeaconViews{Device: k.device, Navigation: k.nav, Count: c}
		if k.path != "" {
			v.Page = origin + k.path
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Page != b.Page {
			return a.Page < b.Page
		}
		if a.Device != b.Device {
			return a.Device < b.Device
		}
		return a.Navigation < b.Navigation
	})
	return out
}

// BeaconElement is an element the beacon saw as a page's LCP element (with its resource) or
// its CLS largest shift's target: how often, and the p75 of the metric when it was.
type BeaconElement struct {
	Page     string
	Device   FieldDevice
	Metric   string // lcp or cls
	Selector string
	Resource string // LCP's image or other resource, without query; "" for text or CLS
	Count    int64
	P75      float64
	LastSeen time.Time
}

// BeaconElementsFrom turns summed element rows (parts "lcp" and "cls") into elements, most seen
// first, then by p75, at most limit (<= 0: 10).
func BeaconElementsFrom(origin string, rows []BeaconInteractionCount, limit int) []BeaconElement {
	if limit <= 0 {
		limit = 10
	}
	type key struct {
		path, selector, resource, metric string
		device                           FieldDevice
	}
	bins := map[key]map[int]float64{}
	seen := map[key]time.Time{}
	for _, r := range rows {
		if r.Part != "lcp" && r.Part != "cls" {
			continue
		}
		k := key{r.Path, r.Selector, r.EventType, r.Part, r.Device}
		if bins[k] == nil {
			bins[k] = map[int]float64{}
		}
		bins[k][r.Bin] += r.Count
		if r.Seen.After(seen[k]) {
			seen[k] = r.Seen.UTC()
		}
	}
	out := make([]BeaconElement, 0, len(bins))
	for k, b := range bins {
		var n float64
		for _, c := range b {
			n += c
		}
		e := BeaconElement{Device: k.device, Metric: k.metric, Selector: k.selector, Resource: k.resource, Count: int64(math.Round(n)), LastSeen: seen[k]}
		if k.path != "" {
			e.Page = origin + k.path
		}
		e.P75, _ = BeaconP75(k.metric, b)
		out = append(out, e)
	}
	return mostSeenFirst(out, limit, func(e BeaconElement) (int64, float64, []string) {
		return e.Count, e.P75, []string{e.Page, e.Metric, e.Selector, string(e.Device), e.Resource}
	})
}
