package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"sitepulse/handlers/svg"
	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// This file holds get_field_data (DESIGN §19): what real users measured, beside the lab.

// get_field_data reads a site's CrUX history, its beacon days and its slowest interactions
// (store.FieldReads), scoped to the user's workspaces, over the field's read windows.
const fieldSlowMax = 10

type fieldPoint struct {
	Start   string   `json:"start"`
	End     string   `json:"end"`
	P75     *float64 `json:"p75"`
	Samples int64    `json:"samples,omitempty"`
}

type fieldSeries struct {
	Device string       `json:"device"`
	Metric string       `json:"metric"`
	Unit   string       `json:"unit"`
	Latest *float64     `json:"latest"`
	Rating string       `json:"rating"`
	Points []fieldPoint `json:"points"`
}

type slowInteraction struct {
	PagePath           string  `json:"pagePath"`
	Device             string  `json:"device"`
	Selector           string  `json:"selector"`
	EventType          string  `json:"eventType"`
	Count              int64   `json:"count"`
	P75                float64 `json:"p75"`
	InputDelay         float64 `json:"inputDelay"`
	ProcessingDuration float64 `json:"processingDuration"`
	PresentationDelay  float64 `json:"presentationDelay"`
	LastSeen           string  `json:"lastSeen"`
}

type fieldData struct {
	SiteID   string `json:"siteId"`
	PagePath string `json:"pagePath"` // "" for the whole site
	HasData  bool   `json:"hasData"`
	// Crux are the weekly p75 series of the CrUX History API (each point a 28-day window),
	// Beacon the daily p75 series of SitePulse's beacon, by device then metric.
	Crux             []fieldSeries     `json:"crux"`
	Beacon           []fieldSeries     `json:"beacon"`
	SlowInteractions []slowInteraction `json:"slowInteractions"`
	// FieldOnly are the field-only regressions: the beacon's p75 crossed into a worse band.
	FieldOnly []analysis.FieldRegression `json:"fieldOnly"`
	Note      string                     `json:"note"`
}

func (s *Server) getFieldData(ctx context.Context, userID string, a args) (fieldData, error) {
	site, err := s.sites.Site(ctx, userID, a.str("siteId", ""))
	if errors.Is(err, store.ErrNotFound) {
		return fieldData{}, errSiteNotFound
	}
	if err != nil {
		return fieldData{}, err
	}
	path := a.str("pagePath", "")
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	out := fieldData{SiteID: site.ID, PagePath: path, Crux: []fieldSeries{}, Beacon: []fieldSeries{}, SlowInteractions: []slowInteraction{},
		FieldOnly: []analysis.FieldRegression{}}
	if s.field == nil {
		out.Note = noFieldNote
		return out, nil
	}
	page := ""
	if path != "" {
		page = store.SiteOrigin(site.Domain) + path
	}
	now := s.now()
	q := store.FieldQuery{Page: page, Device: store.FieldDevice(a.str("device", ""))}
	crux, err := s.field.CruxSeries(ctx, userID, site.ID, store.FieldQuery{Page: q.Page, Device: q.Device, From: now.Add(-store.FieldCruxSpan)})
	if err != nil {
		return fieldData{}, err
	}
	beacon, err := s.field.BeaconSeries(ctx, userID, site.ID, store.FieldQuery{Page: q.Page, Device: q.Device, From: now.Add(-store.FieldBeaconSpan)})
	if err != nil {
		return fieldData{}, err
	}
	slow, err := s.field.SlowInteractions(ctx, userID, site.ID, store.FieldQuery{Page: q.Page, Device: q.Device}, fieldSlowMax)
	if err != nil {
		return fieldData{}, err
	}
	out.Crux, out.Beacon = seriesOf(crux), seriesOf(beacon)
	for _, in := range slow {
		out.SlowInteractions = append(out.SlowInteractions, slowInteraction{PagePath: analysis.PagePathOf(in.Page), Device: string(in.Device), Selector: in.Selector,
			EventType: in.EventType, Count: in.Count, P75: in.P75, InputDelay: in.InputDelay, ProcessingDuration: in.ProcessingDuration,
			PresentationDelay: in.PresentationDelay, LastSeen: in.LastSeen.UTC().Format(time.RFC3339)})
	}
	for _, d := range []store.FieldDevice{store.FieldPhone, store.FieldDesktop} {
		if q.Device != "" && d != q.Device {
			continue
		}
		for _, m := range store.FieldMetrics {
			if fr, ok := analysis.FieldOnlyOn(m, page, d, beacon, crux, false, slow); ok {
				out.FieldOnly = append(out.FieldOnly, fr)
			}
		}
	}
	out.HasData = len(out.Crux)+len(out.Beacon) > 0
	if !out.HasData {
		out.Note = noFieldNote
	} else {
		out.Note = "p75 of real users: CrUX weekly (each point the 28 days before its end), the beacon daily. Ratings are web.dev's bands. " +
			"fieldOnly lists regressions the lab cannot see (the latest two beacon days in a worse band than the week before, beyond its day-to-day spread; where a page has no beacon days on a device, CrUX's latest two weekly periods against the four before)."
	}
	return out, nil
}

const noFieldNote = "No field data for this site: CrUX has no history for it (too few Chrome users, or the site's Google API key lacks the CrUX API) and its pages do not carry the SitePulse beacon."

// seriesOf groups points by device and metric, oldest first, leaving out series with no value.
func seriesOf(points []store.FieldPoint) []fieldSeries {
	var out []fieldSeries
	for _, d := range []store.FieldDevice{store.FieldPhone, store.FieldDesktop} {
		for _, metric := range store.FieldMetrics {
			m, _ := analysis.Lookup(metric)
			fs := fieldSeries{Device: string(d), Metric: metric, Unit: m.Unit, Points: []fieldPoint{}}
			for _, p := range points {
				if p.Device == d && p.Metric == metric {
					fs.Points = append(fs.Points, fieldPoint{Start: p.Start.UTC().Format(time.RFC3339), End: p.End.UTC().Format(time.RFC3339), P75: p.P75, Samples: p.Samples})
					if p.P75 != nil {
						fs.Latest = p.P75
					}
				}
			}
			if fs.Latest != nil {
				fs.Rating = analysis.FieldBand(metric, *fs.Latest)
				out = append(out, fs)
			}
		}
	}
	if out == nil {
		out = []fieldSeries{}
	}
	return out
}

// summary is get_field_data's text: the latest p75 of each series in words, the field-only
// regressions and the slowest interactions; the structured result has every point.
func (f fieldData) summary() string {
	if !f.HasData {
		return f.Note
	}
	var b strings.Builder
	scope := "the whole site"
	if f.PagePath != "" {
		scope = f.PagePath
	}
	fmt.Fprintf(&b, "Field data (real users) for %s.\n", scope)
	for _, src := range []struct {
		name   string
		series []fieldSeries
	}{{"CrUX, latest 28-day p75", f.Crux}, {"Beacon, latest daily p75", f.Beacon}} {
		if len(src.series) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s:", src.name)
		for i, s := range src.series {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(&b, "%s %s %s %s (%s)", sep, s.Device, analysis.Label(s.Metric), analysis.FormatValue(s.Metric, *s.Latest), s.Rating)
		}
		b.WriteString(".\n")
	}
	for _, r := range f.FieldOnly {
		fmt.Fprintf(&b, "Field-only regression: %s.\n", r.Text)
	}
	if len(f.SlowInteractions) > 0 {
		b.WriteString("Slowest interactions:")
		for i, in := range f.SlowInteractions {
			sep := ";"
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(&b, "%s %s on %s %s (%d times the INP, p75 %s)", sep, in.EventType, in.PagePath, in.Selector, in.Count, analysis.FormatMs(in.P75))
		}
		b.WriteString(".\n")
	}
	b.WriteString("The structured result has every weekly and daily point.")
	return b.String()
}

// fieldView is what the field view draws: the two trends of each metric on phones, drawn by the
// web UI's chart code (svg.FieldChart) with the web.dev bands.
type fieldView struct {
	Charts []fieldViewChart `json:"charts"`
	Legend []svg.LegendItem `json:"legend"`
}

type fieldViewChart struct {
	Metric string `json:"metric"`
	Label  string `json:"label"`
	Device string `json:"device"`
	Chart  string `json:"chart"`
}

func (f fieldData) viewData(context.Context, *Server, string) (any, error) {
	v := fieldView{Charts: []fieldViewChart{}, Legend: svg.FieldLegend}
	back := func(ss []fieldSeries, device, metric string) []store.FieldPoint {
		var out []store.FieldPoint
		for _, s := range ss {
			if s.Device != device || s.Metric != metric {
				continue
			}
			for _, p := range s.Points {
				start, _ := time.Parse(time.RFC3339, p.Start)
				end, _ := time.Parse(time.RFC3339, p.End)
				out = append(out, store.FieldPoint{Start: start, End: end, P75: p.P75, Samples: p.Samples})
			}
		}
		return out
	}
	for _, d := range []store.FieldDevice{store.FieldPhone, store.FieldDesktop} {
		for _, m := range svg.FieldMetricsShown {
			t := svg.FieldTrend{Metric: m, Device: d, Crux: back(f.Crux, string(d), m), Beacon: back(f.Beacon, string(d), m)}
			if chart := svg.FieldChart(t); chart != "" {
				v.Charts = append(v.Charts, fieldViewChart{Metric: m, Label: analysis.Label(m), Device: string(d), Chart: chart})
			}
		}
	}
	return v, nil
}
