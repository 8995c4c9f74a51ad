package handlers

import (
	"context"
	"time"

	"sitepulse/handlers/svg"
	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// The field surfaces read a site's CrUX history, its beacon days and its slowest interactions
// (store.FieldReads, DESIGN §19), each scoped to the user's workspaces. The field status of a
// regression is computed on read from these (the rules of scanner/analysis/field.go): two or
// three reads of a few hundred points, cheaper than keeping a status that would go stale as
// the field's days arrive.
const (
	fieldSlowShown   = 10 // the slowest interactions listed
	fieldVerdictMax  = 6  // the regressions given a field status on one page view
	fieldOnlyPageMax = 3  // the pages (of the slowest interactions) checked for field-only regressions
)

// fieldPanel is the field beside the lab on the site page, the page detail and the scan page.
type fieldPanel struct {
	HasData  bool // any CrUX or beacon point with a value: else "no field data for this site"
	Scope    string
	Charts   []svg.TrendChart
	Latest   []fieldFigure
	Disagree []analysis.Disagreement
	// Verdicts are the field statuses of the lab's regressions, when a publish started the scan.
	Verdicts  []fieldVerdict
	FieldOnly []analysis.FieldRegression
	Slow      []store.Interaction
	Publish   *store.Publish
}

// fieldFigure is a metric's latest field p75 from each source, rated by the metric table.
type fieldFigure struct {
	Metric           string
	Crux, Beacon     *float64
	CruxAt, BeaconAt time.Time
}

// fieldVerdict is a lab regression and what the field says of it.
type fieldVerdict struct {
	Regression   analysis.Regression
	Beacon, Crux analysis.FieldVerdict
}

// Felt is true when either source confirms the regression in the field.
func (v fieldVerdict) Felt() bool {
	return v.Beacon.Status == analysis.FieldFelt || v.Crux.Status == analysis.CruxSeen
}

// fieldInput is what a surface hands the field panel of the lab: the page ("" for the whole
// site), the lab's values per scan and latest, the regressions of the latest scan with their
// pages' URLs, and the publish that started it.
type fieldInput struct {
	Page        string
	Lab         map[string][]svg.LabPoint
	LabLatest   map[string]*float64
	Regressions []analysis.Regression
	PageURLs    map[string]string // a regression's page path to its URL
	Publish     *store.Publish
	Publishes   []store.Publish
}

// fieldPanelOf reads and judges a site's field data for one surface; the zero panel (no field
// data) when the service has no field store.
func (s *server) fieldPanelOf(ctx context.Context, uid string, site store.Site, in fieldInput) (fieldPanel, error) {
	p := fieldPanel{Scope: analysis.PagePathOf(in.Page), Publish: in.Publish}
	if s.Field == nil {
		return p, nil
	}
	now := s.Now()
	q := store.FieldQuery{Page: in.Page, Device: store.FieldPhone}
	crux, err := s.Field.CruxSeries(ctx, uid, site.ID, withFrom(q, now.Add(-store.FieldCruxSpan)))
	if err != nil {
		return p, err
	}
	beacon, err := s.Field.BeaconSeries(ctx, uid, site.ID, withFrom(q, now.Add(-store.FieldBeaconSpan)))
	if err != nil {
		return p, err
	}
	if p.Slow, err = s.Field.SlowInteractions(ctx, uid, site.ID, store.FieldQuery{Page: in.Page}, fieldSlowShown); err != nil {
		return p, err
	}
	var trends []svg.FieldTrend
	for _, m := range svg.FieldMetricsShown {
		t := svg.FieldTrend{Metric: m, Device: store.FieldPhone, Crux: ofMetric(crux, m), Beacon: ofMetric(beacon, m), Lab: in.Lab[m]}
		trends = append(trends, t)
		f := fieldFigure{Metric: m}
		f.Crux, f.CruxAt = latestP75(t.Crux, true)
		f.Beacon, f.BeaconAt = latestP75(t.Beacon, false)
		if f.Crux == nil && f.Beacon == nil {
			continue
		}
		p.HasData = true
		p.Latest = append(p.Latest, f)
		field := f.Beacon
		if field == nil {
			field = f.Crux
		}
		if d, ok := analysis.LabFieldDisagree(m, in.LabLatest[m], field); ok {
			p.Disagree = append(p.Disagree, d)
		}
	}
	if !p.HasData {
		return p, nil
	}
	p.Charts = svg.FieldCharts(trends, in.Publishes)

	// The lab's regressions of field metrics, when a publish started the scan: the field
	// status of each, from the beacon days and the CrUX periods of its page and device.
	labSaw := map[string]bool{} // page URL + metric
	for _, r := range in.Regressions {
		labSaw[in.PageURLs[r.PagePath]+" "+r.Metric] = true
		labSaw[" "+r.Metric] = true // the site-wide series: any page's regression
		if in.Publish == nil || len(p.Verdicts) == fieldVerdictMax || !isFieldMetric(r.Metric) {
			continue
		}
		rq := store.FieldQuery{Page: in.PageURLs[r.PagePath], Device: analysis.DeviceOf(r.Strategy), Metric: r.Metric}
		bd, err := s.Field.BeaconSeries(ctx, uid, site.ID, withFrom(rq, in.Publish.PublishedOn.Add(-store.FieldBeaconSpan/2)))
		if err != nil {
			return p, err
		}
		cd, err := s.Field.CruxSeries(ctx, uid, site.ID, withFrom(rq, in.Publish.PublishedOn.Add(-store.FieldCruxSpan/4)))
		if err != nil {
			return p, err
		}
		v := fieldVerdict{Regression: r,
			Beacon: analysis.FieldOfBeacon(r.Metric, rq.Device, in.Publish.PublishedOn, bd, now, analysis.DefaultFieldRule),
			Crux:   analysis.FieldOfCrux(r.Metric, rq.Device, in.Publish.PublishedOn, cd, now, analysis.DefaultFieldRule)}
		if v.Beacon.Status != analysis.FieldNoData || v.Crux.Status != analysis.FieldNoData { // a page the field knows nothing of says nothing
			p.Verdicts = append(p.Verdicts, v)
		}
	}

	// Field-only regressions: the series read above, then the pages of the slowest
	// interactions (where INP problems live), the lab's regressions set aside.
	check := func(page string, days, crux []store.FieldPoint, slow []store.Interaction) {
		for _, m := range store.FieldMetrics {
			if fr, ok := analysis.FieldOnlyOn(m, page, store.FieldPhone, days, crux, labSaw[page+" "+m], slow); ok {
				p.FieldOnly = append(p.FieldOnly, fr)
			}
		}
	}
	check(in.Page, beacon, crux, p.Slow)
	seen := map[string]bool{in.Page: true}
	for _, in := range p.Slow {
		if seen[in.Page] || len(seen) > fieldOnlyPageMax {
			continue
		}
		seen[in.Page] = true
		days, err := s.Field.BeaconSeries(ctx, uid, site.ID, store.FieldQuery{Page: in.Page, Device: store.FieldPhone, From: now.Add(-store.FieldBeaconSpan)})
		if err != nil {
			return p, err
		}
		var slow []store.Interaction
		for _, x := range p.Slow {
			if x.Page == in.Page {
				slow = append(slow, x)
			}
		}
		check(in.Page, days, nil, slow)
	}
	return p, nil
}

func withFrom(q store.FieldQuery, from time.Time) store.FieldQuery { q.From = from; return q }

func isFieldMetric(m string) bool {
	for _, f := range store.FieldMetrics {
		if f == m {
			return true
		}
	}
	return false
}

func ofMetric(ps []store.FieldPoint, metric string) []store.FieldPoint {
	var out []store.FieldPoint
	for _, p := range ps {
		if p.Metric == metric {
			out = append(out, p)
		}
	}
	return out
}

// latestP75 is the newest point with a value, and its time: a CrUX period's end, a beacon day's start.
func latestP75(ps []store.FieldPoint, atEnd bool) (*float64, time.Time) {
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].P75 != nil {
			if atEnd {
				return ps[i].P75, ps[i].End
			}
			return ps[i].P75, ps[i].Start
		}
	}
	return nil, time.Time{}
}

// exportField is a page's field figures in the JSON export: on the device of the row's strategy,
// each metric's latest p75 as of the scan from each source (CrUX's period ending last before the
// scan completed, the beacon's day holding it or the last before), rated by web.dev's bands.
type exportField struct {
	Device store.FieldDevice            `json:"device"`
	Crux   map[string]exportFieldFigure `json:"crux,omitempty"`
	Beacon map[string]exportFieldFigure `json:"beacon,omitempty"`
}

type exportFieldFigure struct {
	P75     float64   `json:"p75"`
	Rating  string    `json:"rating"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Samples int64     `json:"samples,omitempty"`
}

// exportFieldOf gives the export's rows their field figures, reading each page's once (both
// devices, both sources) as its first row streams; scan is the export's scan, set before the
// first row.
func (s *server) exportFieldOf(ctx context.Context, uid, siteID string, scan *store.Scan) func(string, store.Strategy) (*exportField, error) {
	type read struct{ crux, beacon []store.FieldPoint }
	pages := map[string]read{}
	return func(pageURL string, strategy store.Strategy) (*exportField, error) {
		at := s.Now()
		if scan.CompletedAt != nil {
			at = *scan.CompletedAt
		}
		rd, ok := pages[pageURL]
		if !ok {
			q := store.FieldQuery{Page: pageURL, From: at.Add(-store.FieldBeaconSpan), To: at.Add(time.Nanosecond)}
			var err error
			if rd.crux, err = s.Field.CruxSeries(ctx, uid, siteID, q); err != nil {
				return nil, err
			}
			if rd.beacon, err = s.Field.BeaconSeries(ctx, uid, siteID, q); err != nil {
				return nil, err
			}
			pages[pageURL] = rd
		}
		f := exportField{Device: analysis.DeviceOf(strategy)}
		figures := func(ps []store.FieldPoint) map[string]exportFieldFigure {
			out := map[string]exportFieldFigure{}
			for _, p := range ps { // oldest first: the last one with a value wins
				if p.Device == f.Device && p.P75 != nil {
					out[p.Metric] = exportFieldFigure{P75: *p.P75, Rating: analysis.FieldBand(p.Metric, *p.P75), Start: p.Start, End: p.End, Samples: p.Samples}
				}
			}
			if len(out) == 0 {
				return nil
			}
			return out
		}
		f.Crux, f.Beacon = figures(rd.crux), figures(rd.beacon)
		if f.Crux == nil && f.Beacon == nil {
			return nil, nil
		}
		return &f, nil
	}
}
