package analysis

import (
	"fmt"
	"net/url"
	"sort"
	"time"

	"sitepulse/store"
)

// Field data (DESIGN §19) judged beside the lab: the band of a field p75 (by the metric table's
// Bands, never a second table), whether lab and field disagree, the field status of a confirmed
// lab regression tied to a publish, and the field-only regressions the lab did not see. Every
// function here is pure: the surfaces read the points and hand them over.

// FieldBand rates a field p75 by the metric table's web.dev bands: good, needs-improvement or
// poor; "" for a metric without bands.
func FieldBand(metric string, p75 float64) string { return VitalRating(metric, p75) }

// HistogramP75 is the p75 of a histogram, exact to a bin: the upper edge of the bin in which the
// running count first reaches three quarters of the total (an open-ended last bin answers its
// start, the most that can be said of it). Bins are taken in the order of their starts. ok is
// false for an empty histogram.
func HistogramP75(bins []store.FieldBin) (p75 float64, ok bool) {
	sorted := append([]store.FieldBin(nil), bins...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Start < sorted[j].Start })
	var total float64
	for _, b := range sorted {
		if b.Count > 0 {
			total += b.Count
		}
	}
	if total <= 0 {
		return 0, false
	}
	var run float64
	for _, b := range sorted {
		if b.Count <= 0 {
			continue
		}
		run += b.Count
		if run >= 0.75*total {
			if b.End <= b.Start {
				return b.Start, true
			}
			return b.End, true
		}
	}
	return 0, false // unreachable: the running count reaches the total
}

// Disagreement is "lab and field disagree": the lab's verdict on a metric and the field's p75
// fall in different bands.
type Disagreement struct {
	Metric    string
	Lab       float64
	Field     float64
	LabBand   string
	FieldBand string
}

// Text is the flag as people read it: "LCP: lab says poor (4.2 s), field says good (2.1 s)".
func (d Disagreement) Text() string {
	return fmt.Sprintf("%s: lab says %s (%s), field says %s (%s)", Label(d.Metric), bandWords(d.LabBand), FormatValue(d.Metric, d.Lab),
		bandWords(d.FieldBand), FormatValue(d.Metric, d.Field))
}

// LabFieldDisagree reports whether a lab value and a field p75 of one metric fall in different
// bands; false when either is missing or the metric has no bands.
func LabFieldDisagree(metric string, lab, field *float64) (Disagreement, bool) {
	if lab == nil || field == nil {
		return Disagreement{}, false
	}
	d := Disagreement{Metric: metric, Lab: *lab, Field: *field, LabBand: FieldBand(metric, *lab), FieldBand: FieldBand(metric, *field)}
	return d, d.LabBand != "" && d.FieldBand != "" && d.LabBand != d.FieldBand
}

func bandWords(band string) string {
	if band == RatingNI {
		return "needs improvement"
	}
	return band
}

// FieldRule holds the numbers of the field rules (FieldOfBeacon, FieldOfCrux, FieldOnly).
type FieldRule struct {
	// MinDaySamples: a beacon day with fewer samples is left out (too few for its p75).
	MinDaySamples int64
	// MinSideSamples: the kept days on each side of a publish must hold this many samples together.
	MinSideSamples int64
	// MinBeforeDays: the days before a publish must be at least this many, to measure a spread.
	MinBeforeDays int
	// BeforeDays: how many days before a publish make its baseline (the latest ones).
	BeforeDays int
	// MinRise: the least rise counted, as a share of the baseline, however calm the days before.
	MinRise float64
	// CruxWindow: the CrUX collection window; a publish is "not seen" once a period ending
	// this long after it shows nothing.
	CruxWindow time.Duration
	// RecentDays: the beacon days a field-only regression is judged on (the latest ones).
	RecentDays int
}

// DefaultFieldRule is the rule SitePulse applies (docs/field.md states it).
var DefaultFieldRule = FieldRule{MinDaySamples: 20, MinSideSamples: 100, MinBeforeDays: 3, BeforeDays: 7, MinRise: 0.10,
	CruxWindow: 28 * 24 * time.Hour, RecentDays: 2}

// CruxFieldRule is FieldOnly's rule on CrUX's weekly periods, for a page the beacon has no days
// of: no sample counts (CrUX gives none), the latest 2 periods against the 4 before them (at
// least 3). Each period averages 28 days, so it is slow to show a change, and slow to forget it.
var CruxFieldRule = FieldRule{MinBeforeDays: 3, BeforeDays: 4, MinRise: 0.10, CruxWindow: 28 * 24 * time.Hour, RecentDays: 2}

// FieldStatus is a confirmed regression's standing in the field.
type FieldStatus string

const (
	FieldNoData  FieldStatus = "no-data"  // no field data before the publish to compare with
	FieldWaiting FieldStatus = "waiting"  // beacon: too few samples after the publish yet
	FieldFelt    FieldStatus = "felt"     // beacon: the days after rose beyond the days before's spread
	FieldNotFelt FieldStatus = "not-felt" // beacon: enough samples after, within the spread
	CruxNotYet   FieldStatus = "not-yet-seen"
	CruxSeen     FieldStatus = "seen"
	CruxNotSeen  FieldStatus = "not-seen" // a period ending 28 days after the publish showed nothing
)

// FieldVerdict is one source's answer for one metric and device after a publish.
type FieldVerdict struct {
	Source        store.FieldSource `json:"source"`
	Status        FieldStatus       `json:"status"`
	Metric        string            `json:"metric"`
	Device        store.FieldDevice `json:"device"`
	Before        *float64          `json:"before,omitempty"` // the baseline p75
	After         *float64          `json:"after,omitempty"`  // the p75 after the publish
	BeforeSamples int64             `json:"beforeSamples,omitempty"`
	AfterSamples  int64             `json:"afterSamples,omitempty"`
	Text          string            `json:"text"`
}

// rises reports whether after is beyond the day-to-day spread of the baseline: above the
// baseline by more than the spread (the highest minus the lowest p75 before) and by more than
// MinRise of the baseline.
func (r FieldRule) rises(baseline, spread, after float64) bool {
	return after-baseline > spread && after-baseline > r.MinRise*baseline
}

// FieldOfBeacon is the beacon's field status of a confirmed lab regression of metric on device
// tied to a publish at publish. The rule, exactly:
//
//   - The days are the beacon's daily points of that page (or site), metric and device. A day
//     counts when it has a p75 and at least MinDaySamples samples. The day holding the publish
//     is left out (half before, half after).
//   - Before: the latest BeforeDays counted days that end at or before the publish; at least
//     MinBeforeDays of them and MinSideSamples samples together, else FieldNoData.
//   - After: every counted day that starts at or after the publish; at least MinSideSamples
//     samples together, else FieldWaiting.
//   - baseline = the median of the before days' p75, spread = their highest minus their lowest,
//     after = the median of the after days' p75 (the mean of the middle two for an even count).
//   - FieldFelt when after − baseline exceeds both the spread and MinRise × baseline;
//     FieldNotFelt otherwise.
//
// now names the publish's day: its weekday within a week, else its date.
func FieldOfBeacon(metric string, device store.FieldDevice, publish time.Time, days []store.FieldPoint, now time.Time, r FieldRule) FieldVerdict {
	v := FieldVerdict{Source: store.FieldBeacon, Metric: metric, Device: device}
	var before, after []store.FieldPoint
	for _, d := range days {
		if d.Metric != metric || d.Device != device || d.P75 == nil || d.Samples < r.MinDaySamples {
			continue
		}
		switch {
		case !d.End.After(publish):
			before = append(before, d)
		case !d.Start.Before(publish):
			after = append(after, d)
		}
	}
	sort.SliceStable(before, func(i, j int) bool { return before[i].Start.Before(before[j].Start) })
	if len(before) > r.BeforeDays {
		before = before[len(before)-r.BeforeDays:]
	}
	bv, bn := p75s(before)
	av, an := p75s(after)
	v.BeforeSamples, v.AfterSamples = bn, an
	if len(before) < r.MinBeforeDays || bn < r.MinSideSamples {
		v.Status, v.Text = FieldNoData, "no beacon data before the publish to compare with"
		return v
	}
	baseline, spread := median(bv), bv[len(bv)-1]-bv[0]
	v.Before = &baseline
	if an < r.MinSideSamples {
		v.Status = FieldWaiting
		v.Text = fmt.Sprintf("waiting for users: %d of %d beacon samples since the publish of %s", an, r.MinSideSamples, publishDay(publish, now))
		return v
	}
	a := median(av)
	v.After = &a
	if r.rises(baseline, spread, a) {
		v.Status = FieldFelt
		v.Text = fmt.Sprintf("felt by users: %s p75 %s → %s on %s since the publish of %s", Label(metric), FormatValue(metric, baseline),
			FormatValue(metric, a), devicePlural(device), publishDay(publish, now))
		return v
	}
	v.Status = FieldNotFelt
	v.Text = fmt.Sprintf("not felt by users: %s p75 %s → %s on %s since the publish of %s, within the day-to-day spread", Label(metric),
		FormatValue(metric, baseline), FormatValue(metric, a), devicePlural(device), publishDay(publish, now))
	return v
}

// FieldOfCrux is CrUX's field status of a confirmed lab regression tied to a publish. A CrUX
// period averages the 28 days before its end, so a publish shows in it slowly. The rule, exactly:
//
//   - The periods are CrUX's weekly points of that page (or origin), metric and device with a p75.
//   - Before: the latest 4 periods that end at or before the publish; none: FieldNoData. The
//     baseline is the latest one's p75, the spread their highest minus their lowest.
//   - After: the periods that end after the publish. CruxSeen when one of them rose beyond the
//     spread (after − baseline exceeds both the spread and MinRise × baseline, as the beacon's
//     rule), the first such one quoted; else CruxNotSeen when one of them ends CruxWindow or
//     more after the publish (its window holds only days after it); else CruxNotYet.
func FieldOfCrux(metric string, device store.FieldDevice, publish time.Time, periods []store.FieldPoint, now time.Time, r FieldRule) FieldVerdict {
	v := FieldVerdict{Source: store.FieldCrUX, Metric: metric, Device: device}
	var before, after []store.FieldPoint
	for _, p := range periods {
		if p.Metric != metric || p.Device != device || p.P75 == nil {
			continue
		}
		if !p.End.After(publish) {
			before = append(before, p)
		} else {
			after = append(after, p)
		}
	}
	sort.SliceStable(before, func(i, j int) bool { return before[i].End.Before(before[j].End) })
	sort.SliceStable(after, func(i, j int) bool { return after[i].End.Before(after[j].End) })
	if len(before) == 0 {
		v.Status, v.Text = FieldNoData, "no CrUX data before the publish to compare with"
		return v
	}
	if len(before) > 4 {
		before = before[len(before)-4:]
	}
	bv, _ := p75s(before)
	baseline, spread := *before[len(before)-1].P75, bv[len(bv)-1]-bv[0]
	v.Before = &baseline
	for _, p := range after {
		if r.rises(baseline, spread, *p.P75) {
			a := *p.P75
			v.After, v.Status = &a, CruxSeen
			v.Text = fmt.Sprintf("seen in the field: CrUX %s p75 %s → %s on %s since the publish of %s", Label(metric), FormatValue(metric, baseline),
				FormatValue(metric, a), devicePlural(device), publishDay(publish, now))
			return v
		}
	}
	if n := len(after); n > 0 {
		last := *after[n-1].P75
		v.After = &last
		if !after[n-1].End.Before(publish.Add(r.CruxWindow)) {
			v.Status = CruxNotSeen
			v.Text = fmt.Sprintf("not seen in the field after 28 days: CrUX %s p75 %s → %s on %s", Label(metric), FormatValue(metric, baseline),
				FormatValue(metric, last), devicePlural(device))
			return v
		}
	}
	v.Status = CruxNotYet
	v.Text = fmt.Sprintf("not yet seen in the field: CrUX's 28-day window still holds days before the publish of %s", publishDay(publish, now))
	return v
}

// FieldRegression is a field-only regression: the beacon's p75 crossed into a worse band while
// the lab saw nothing, with the slowest interaction named for INP.
type FieldRegression struct {
	Source      store.FieldSource  `json:"source"` // beacon days, or CrUX periods (CruxFieldRule) where the page has no beacon
	Metric      string             `json:"metric"`
	Page        string             `json:"page"`
	Device      store.FieldDevice  `json:"device"`
	From        float64            `json:"from"`
	To          float64            `json:"to"`
	FromBand    string             `json:"fromBand"`
	ToBand      string             `json:"toBand"`
	Interaction *store.Interaction `json:"interaction,omitempty"`
	Text        string             `json:"text"`
	// Since is the day the regression began: the first of its recent days when it first held.
	// It stays the same while the regression lasts, so it names the regression (an alert is
	// raised once per Since); one that ends and comes back has a new one.
	Since time.Time `json:"since"`
}

// FieldOnly finds a field-only regression in a page's beacon days of one metric and device.
// The rule, exactly: the counted days (a p75 and MinDaySamples samples) are split into the
// latest RecentDays (recent) and the BeforeDays before them (baseline); each side needs
// MinSideSamples samples and the baseline MinBeforeDays days. A regression is when the band of
// the recent days' lowest p75 (every recent day crossed, so one bad day is not enough) is worse
// than the band of the baseline's median p75 and the rise is
// beyond the baseline's spread (FieldOfBeacon's test), and labSaw is false (no confirmed lab
// regression of that page and metric in the same days). For INP the slowest interaction of the
// page (the first of slowest, as the store orders them) is named. Since is found by asking the
// same of the days up to each earlier day, while it holds.
func FieldOnly(metric string, page string, device store.FieldDevice, days []store.FieldPoint, labSaw bool, slowest []store.Interaction, r FieldRule) (FieldRegression, bool) {
	if labSaw {
		return FieldRegression{}, false
	}
	var kept []store.FieldPoint
	for _, d := range days {
		if d.Metric == metric && d.Device == device && d.P75 != nil && d.Samples >= r.MinDaySamples {
			kept = append(kept, d)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].Start.Before(kept[j].Start) })
	fr, ok := fieldOnly(metric, page, device, kept, slowest, r)
	if !ok {
		return fr, false
	}
	for n := len(kept) - 1; n > 0; n-- {
		earlier, held := fieldOnly(metric, page, device, kept[:n], slowest, r)
		if !held {
			break
		}
		fr.Since = earlier.Since
	}
	return fr, true
}

// FieldOnlyOn is the field-only rule as every surface applies it (the alerts, the daily field
// check, the site and page views, MCP get_field_data): on the beacon's days of the device, or,
// where the beacon has none of that device, on CrUX's weekly periods (CruxFieldRule, with no
// interaction to name).
func FieldOnlyOn(metric, page string, device store.FieldDevice, beacon, crux []store.FieldPoint, labSaw bool, slowest []store.Interaction) (FieldRegression, bool) {
	if HasDays(beacon, device) {
		return FieldOnly(metric, page, device, beacon, labSaw, slowest, DefaultFieldRule)
	}
	return FieldOnly(metric, page, device, crux, labSaw, nil, CruxFieldRule)
}

// HasDays says whether points holds any of device.
func HasDays(points []store.FieldPoint, device store.FieldDevice) bool {
	for _, p := range points {
		if p.Device == device {
			return true
		}
	}
	return false
}

// fieldOnly is FieldOnly's rule on the counted days of one metric and device, oldest first.
func fieldOnly(metric string, page string, device store.FieldDevice, kept []store.FieldPoint, slowest []store.Interaction, r FieldRule) (FieldRegression, bool) {
	if len(kept) < r.RecentDays+r.MinBeforeDays {
		return FieldRegression{}, false
	}
	recent, before := kept[len(kept)-r.RecentDays:], kept[:len(kept)-r.RecentDays]
	if len(before) > r.BeforeDays {
		before = before[len(before)-r.BeforeDays:]
	}
	bv, bn := p75s(before)
	rv, rn := p75s(recent)
	if bn < r.MinSideSamples || rn < r.MinSideSamples {
		return FieldRegression{}, false
	}
	from, to := median(bv), rv[0]
	fb, tb := FieldBand(metric, from), FieldBand(metric, to)
	if fb == "" || ratingRank[tb] <= ratingRank[fb] || !r.rises(from, bv[len(bv)-1]-bv[0], to) {
		return FieldRegression{}, false
	}
	fr := FieldRegression{Source: recent[0].Source, Metric: metric, Page: page, Device: device, From: from, To: to, FromBand: fb, ToBand: tb, Since: recent[0].Start.UTC()}
	fr.Text = fmt.Sprintf("%s p75 %s on %s (%s)", Label(metric), FormatValue(metric, to), PagePathOf(page), devicePlural(device))
	if fr.Source == store.FieldCrUX {
		fr.Text = fmt.Sprintf("%s p75 %s on %s (%s, CrUX)", Label(metric), FormatValue(metric, to), PagePathOf(page), devicePlural(device))
		return fr, true // CrUX names no interaction
	}
	if metric == "inp" {
		for i := range slowest {
			if slowest[i].Device == device || slowest[i].Device == "" {
				in := slowest[i]
				fr.Interaction = &in
				fr.Text = fmt.Sprintf("%s p75 %s on %s: %s on %s", Label(metric), FormatValue(metric, to), PagePathOf(page), in.EventType, in.Selector)
				if page == "" && in.Page != "" { // the whole site's INP: say which page the element is on
					fr.Text += " (" + PagePathOf(in.Page) + ")"
				}
				break
			}
		}
	}
	return fr, true
}

// PagePathOf is a field page's path as the UI names it: "/pricing" of "https://x.test/pricing",
// "the whole site" for "" (the origin).
func PagePathOf(page string) string {
	if page == "" {
		return "the whole site"
	}
	if u, err := url.Parse(page); err == nil && u.Host != "" {
		if u.Path == "" {
			return "/"
		}
		return u.Path
	}
	return page
}

// DeviceOf is the field device class a lab strategy stands for.
func DeviceOf(s store.Strategy) store.FieldDevice {
	if s == store.StrategyDesktop {
		return store.FieldDesktop
	}
	return store.FieldPhone
}

func devicePlural(d store.FieldDevice) string {
	switch d {
	case store.FieldPhone:
		return "phones"
	case store.FieldDesktop:
		return "desktops"
	}
	return "all devices"
}

// publishDay names a publish's day: "Tuesday" within the week before now, else "Tue 1 Dec".
func publishDay(publish, now time.Time) string {
	publish, now = publish.UTC(), now.UTC()
	if !publish.After(now) && now.Sub(publish) < 6*24*time.Hour {
		return publish.Weekday().String()
	}
	return publish.Format("Mon 2 Jan")
}

// p75s are the points' p75s, ascending, and their samples together.
func p75s(points []store.FieldPoint) ([]float64, int64) {
	out := make([]float64, 0, len(points))
	var n int64
	for _, p := range points {
		out = append(out, *p.P75)
		n += p.Samples
	}
	sort.Float64s(out)
	return out, n
}

// median of ascending values: the middle one, or the mean of the middle two.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// FieldViolation is a field budget a site's real users broke: the field p75 of a metric (the
// beacon's latest day with samples, else CrUX's latest period) above its budget's maximum.
type FieldViolation struct {
	Metric    string            `json:"metric"`
	Operator  string            `json:"operator"` // always max: field budgets cap a p75
	Threshold float64           `json:"threshold"`
	Actual    float64           `json:"actual"`
	Source    store.FieldSource `json:"source"`
	Device    store.FieldDevice `json:"device"`
}

// CheckFieldBudgets checks field budgets (metric name to the highest p75 allowed) against the
// latest field figure of each metric on device: the beacon's newest point with a value and at
// least MinDaySamples samples, else CrUX's newest period with a value. A metric without a field
// figure breaks nothing (there is nothing to judge). Violations come in FieldMetrics order.
func CheckFieldBudgets(budgets map[string]float64, device store.FieldDevice, beacon, crux []store.FieldPoint, r FieldRule) []FieldViolation {
	out := []FieldViolation{}
	for _, m := range store.FieldMetrics {
		limit, ok := budgets[m]
		if !ok {
			continue
		}
		var actual *float64
		var src store.FieldSource
		for _, cand := range []struct {
			src store.FieldSource
			ps  []store.FieldPoint
			min int64
		}{{store.FieldBeacon, beacon, r.MinDaySamples}, {store.FieldCrUX, crux, 0}} {
			var latest *store.FieldPoint
			for i := range cand.ps {
				p := &cand.ps[i]
				if p.Metric == m && p.Device == device && p.P75 != nil && p.Samples >= cand.min && (latest == nil || p.Start.After(latest.Start)) {
					latest = p
				}
			}
			if latest != nil {
				actual, src = latest.P75, cand.src
				break
			}
		}
		if actual != nil && *actual > limit {
			out = append(out, FieldViolation{Metric: m, Operator: store.OpMax, Threshold: limit, Actual: *actual, Source: src, Device: device})
		}
	}
	return out
}
