package demo

import (
	"context"
	"encoding/json"
	"io/fs"
	"sort"
	"time"

	"sitepulse/store"
)

// The demo's field story (DESIGN §19): what real users of the fictional demo site measured, as
// CrUX's weekly history and the beacon's days, recorded once by a deterministic program
// (TestFieldRecording in field_record_test.go writes testdata/field/demo.json with -update) and
// served to the surfaces through the same reads as real field data. The recording's times are
// days from the day of the demo's publish, so the story sits on the demo's own dates: the
// publish that broke the lab also made the home page's layout shift for real phones (felt),
// left the pricing page's LCP where it was (not felt), and made a button on the pricing page
// slow to answer, which no lab run can see (a field-only INP regression).

// FieldFile is where the recording lives in the fixtures' file system.
const FieldFile = "testdata/field/demo.json"

// FieldRecording is the demo's recorded field data.
type FieldRecording struct {
	About        string                `json:"about"`
	Points       []RecordedPoint       `json:"points"`
	Interactions []RecordedInteraction `json:"interactions"`
}

// RecordedPoint is one field point, its page a path ("" the whole site) and its time a day
// from the publish's day: a beacon day's start, or the end of a CrUX period (28 days before it).
type RecordedPoint struct {
	Source  store.FieldSource `json:"source"`
	Path    string            `json:"path"`
	Device  store.FieldDevice `json:"device"`
	Metric  string            `json:"metric"`
	Day     int               `json:"day"`
	P75     *float64          `json:"p75"`
	Samples int64             `json:"samples,omitempty"`
}

// RecordedInteraction is one of a page's slowest interactions, last seen Day.
type RecordedInteraction struct {
	Path      string            `json:"path"`
	Device    store.FieldDevice `json:"device"`
	Selector  string            `json:"selector"`
	EventType string            `json:"eventType"`
	Count     int64             `json:"count"`
	P75       float64           `json:"p75"`
	Input     float64           `json:"inputDelay"`
	Process   float64           `json:"processingDuration"`
	Present   float64           `json:"presentationDelay"`
	Day       int               `json:"day"`
}

// LoadField reads the recording from the fixtures.
func LoadField(fsys fs.FS) (FieldRecording, error) {
	var r FieldRecording
	b, err := fs.ReadFile(fsys, FieldFile)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(b, &r)
}

// SiteReader finds a site of the user's: the demo's field reads are scoped as the store's are.
type SiteReader interface {
	Site(ctx context.Context, userID, siteID string) (store.Site, error)
}

// Field serves the recording as the demo site's field data and hands every other site's reads
// to the store's: its CrUX history (crux) and its beacon figures (beacon). A half the store does
// not keep (nil) answers nothing. The demo site's CrUX comes from the store too when it keeps
// CrUX (the CrUX double fills it for `go run .`), else from the recording; its beacon days and
// slowest interactions always from the recording.
type Field struct {
	siteID string
	sites  SiteReader
	crux   store.CruxReads
	beacon store.BeaconReads
	points []store.FieldPoint
	slow   []store.Interaction
}

var _ store.FieldReads = (*Field)(nil)

// NewField places the recording on the demo site's dates (day 0 is the UTC day of publish) over
// the store's halves, either of which may be nil. With siteID "" no site is the demo's: it joins
// the store's halves into one store.FieldReads.
func NewField(rec FieldRecording, siteID string, publish time.Time, sites SiteReader, crux store.CruxReads, beacon store.BeaconReads) *Field {
	f := &Field{siteID: siteID, sites: sites, crux: crux, beacon: beacon}
	day0 := publish.UTC().Truncate(24 * time.Hour)
	page := func(path string) string {
		if path == "" {
			return ""
		}
		return "https://" + Domain + path
	}
	for _, p := range rec.Points {
		at := day0.AddDate(0, 0, p.Day)
		fp := store.FieldPoint{Source: p.Source, Page: page(p.Path), Device: p.Device, Metric: p.Metric, P75: p.P75, Samples: p.Samples}
		if p.Source == store.FieldCrUX {
			fp.Start, fp.End = at.AddDate(0, 0, -28), at
		} else {
			fp.Start, fp.End = at, at.AddDate(0, 0, 1)
		}
		f.points = append(f.points, fp)
	}
	sort.SliceStable(f.points, func(i, j int) bool { return f.points[i].Start.Before(f.points[j].Start) })
	for _, in := range rec.Interactions {
		f.slow = append(f.slow, store.Interaction{Page: page(in.Path), Device: in.Device, Selector: in.Selector, EventType: in.EventType,
			Count: in.Count, P75: in.P75, InputDelay: in.Input, ProcessingDuration: in.Process, PresentationDelay: in.Present,
			LastSeen: day0.AddDate(0, 0, in.Day)})
	}
	sort.SliceStable(f.slow, func(i, j int) bool {
		if f.slow[i].Count != f.slow[j].Count {
			return f.slow[i].Count > f.slow[j].Count
		}
		return f.slow[i].P75 > f.slow[j].P75
	})
	return f
}

func (f *Field) series(src store.FieldSource, q store.FieldQuery) []store.FieldPoint {
	var out []store.FieldPoint
	for _, p := range f.points {
		if p.Source == src && p.Page == q.Page && (q.Device == "" || p.Device == q.Device) && (q.Metric == "" || p.Metric == q.Metric) &&
			(q.From.IsZero() || !p.Start.Before(q.From)) && (q.To.IsZero() || p.Start.Before(q.To)) {
			out = append(out, p)
		}
	}
	return out
}

// own checks the user may read the site: the store's answer (ErrNotFound) otherwise.
func (f *Field) own(ctx context.Context, userID, siteID string) error {
	_, err := f.sites.Site(ctx, userID, siteID)
	return err
}

// demo reports whether siteID is the demo site's.
func (f *Field) demo(siteID string) bool { return f.siteID != "" && siteID == f.siteID }

// CruxSeries implements store.CruxReads.
func (f *Field) CruxSeries(ctx context.Context, userID, siteID string, q store.FieldQuery) ([]store.FieldPoint, error) {
	if f.crux != nil {
		ps, err := f.crux.CruxSeries(ctx, userID, siteID, q)
		if err != nil || !f.demo(siteID) || len(ps) > 0 {
			return ps, err
		}
	} else if err := f.own(ctx, userID, siteID); err != nil || !f.demo(siteID) {
		return nil, err
	}
	return f.series(store.FieldCrUX, q), nil
}

// CruxSeriesOf implements store.CruxReads.
func (f *Field) CruxSeriesOf(ctx context.Context, siteID string, q store.FieldQuery) ([]store.FieldPoint, error) {
	if f.crux != nil {
		ps, err := f.crux.CruxSeriesOf(ctx, siteID, q)
		if err != nil || !f.demo(siteID) || len(ps) > 0 {
			return ps, err
		}
	} else if !f.demo(siteID) {
		return nil, nil
	}
	return f.series(store.FieldCrUX, q), nil
}

// BeaconSeries implements store.BeaconReads.
func (f *Field) BeaconSeries(ctx context.Context, userID, siteID string, q store.FieldQuery) ([]store.FieldPoint, error) {
	if !f.demo(siteID) && f.beacon != nil {
		return f.beacon.BeaconSeries(ctx, userID, siteID, q)
	}
	if err := f.own(ctx, userID, siteID); err != nil || !f.demo(siteID) {
		return nil, err
	}
	return f.series(store.FieldBeacon, q), nil
}

// BeaconSeriesOf implements store.BeaconReads.
func (f *Field) BeaconSeriesOf(ctx context.Context, siteID string, q store.FieldQuery) ([]store.FieldPoint, error) {
	if !f.demo(siteID) {
		if f.beacon == nil {
			return nil, nil
		}
		return f.beacon.BeaconSeriesOf(ctx, siteID, q)
	}
	return f.series(store.FieldBeacon, q), nil
}

// SlowInteractions implements store.BeaconReads; Page "" lists every page's.
func (f *Field) SlowInteractions(ctx context.Context, userID, siteID string, q store.FieldQuery, limit int) ([]store.Interaction, error) {
	if !f.demo(siteID) && f.beacon != nil {
		return f.beacon.SlowInteractions(ctx, userID, siteID, q, limit)
	}
	if err := f.own(ctx, userID, siteID); err != nil || !f.demo(siteID) {
		return nil, err
	}
	return f.slowOf(q, limit), nil
}

// SlowInteractionsOf implements store.BeaconReads.
func (f *Field) SlowInteractionsOf(ctx context.Context, siteID string, q store.FieldQuery, limit int) ([]store.Interaction, error) {
	if !f.demo(siteID) {
		if f.beacon == nil {
			return nil, nil
		}
		return f.beacon.SlowInteractionsOf(ctx, siteID, q, limit)
	}
	return f.slowOf(q, limit), nil
}

func (f *Field) slowOf(q store.FieldQuery, limit int) []store.Interaction {
	var out []store.Interaction
	for _, in := range f.slow {
		if (q.Page == "" || in.Page == q.Page) && (q.Device == "" || in.Device == q.Device) && len(out) < limit {
			out = append(out, in)
		}
	}
	return out
}
