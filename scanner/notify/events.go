package notify

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// The events a channel may receive (store.EventTypes): changes that matter, never states, so a
// site whose budgets stay broken scan after scan alerts once.
const (
	EventRegressionConfirmed = store.EventRegressionConfirmed
	EventBudgetBroken        = store.EventBudgetBroken
	EventBudgetRecovered     = store.EventBudgetRecovered
	EventScanFailed          = store.EventScanFailed
	EventFieldRegression     = store.EventFieldRegression
)

// Event is one alert, the signed webhook's body as it is sent; the chat messages are rendered
// from it. ID doubles as the delivery id a receiver uses to drop a duplicate.
type Event struct {
	ID        string      `json:"id"`
	Type      string      `json:"type"`
	CreatedAt time.Time   `json:"createdAt"`
	Workspace EventRef    `json:"workspace"`
	Site      EventSite   `json:"site"`
	Scan      EventScan   `json:"scan"`
	Data      EventDetail `json:"data"`
}

// EventRef names a workspace.
type EventRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// EventSite names the site the event is about.
type EventSite struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Domain string `json:"domain"`
}

// EventScan is the scan the event comes from, its page and who published what started it.
// PublishedBy and PublishedAt are null when the scan was not started by a publish.
type EventScan struct {
	ID          string         `json:"id"`
	URL         string         `json:"url"`
	Strategy    store.Strategy `json:"strategy"`
	Trigger     string         `json:"trigger"`
	PublishedBy *string        `json:"publishedBy"`
	PublishedAt *time.Time     `json:"publishedAt"`
}

// EventDetail is what changed: the confirmed regressions (worst first) and what changed on
// their pages, the broken budgets, or why the scan failed. Lists are never null, so receivers
// can range over them.
type EventDetail struct {
	Regressions []analysis.Regression `json:"regressions"`
	Changes     []EventChange         `json:"changes"`
	Violations  []analysis.Violation  `json:"violations"`
	Reason      string                `json:"reason,omitempty"`
	// Field is what real users measured of the regressions since the publish (their field
	// status, DESIGN §19); FieldOnly the field-only regressions of a field.regression event.
	// Both are absent without field data, so such a site's bodies are as before.
	Field     []analysis.FieldVerdict    `json:"field,omitempty"`
	FieldOnly []analysis.FieldRegression `json:"fieldOnly,omitempty"`
}

// Bounds of a regression.confirmed event's changes, so a body stays a few tens of KB whatever
// the pages load: at most MaxEventPages pages (those of the worst regressions), at most
// MaxEventRequests requests in each list (the largest), each URL at most MaxEventURL runes.
const (
	MaxEventPages    = 10
	MaxEventRequests = 10
	MaxEventURL      = 300
	MaxEventText     = 1000 // runes of a sentence or a reason
)

// EventChange is what changed on one regressed page and strategy between the two runs its
// regressions compare (analysis.Compare of the previous completed scan's run and this one's):
// the cause every message shows, the causes per metric with their reasons, and the requests
// added, removed and grown, bounded (MaxEventRequests; the totals say how many there were).
type EventChange struct {
	PagePath string         `json:"pagePath"`
	Strategy store.Strategy `json:"strategy"`
	// Explained is false when a run was kept without what explains it: then no cause is named.
	Explained bool `json:"explained"`
	// Cause is the page's cause in one sentence (analysis.PageChange.Sentence); Confidence how
	// sure it is (analysis.Cause's), "" when it names no change.
	Cause      string `json:"cause"`
	Confidence string `json:"confidence,omitempty"`
	// Causes are, for each metric that got worse beyond run-to-run noise, its change and the
	// one or two changes that explain most of it, ranked.
	Causes       []analysis.Cause `json:"causes"`
	Added        []EventRequest   `json:"added"`
	Removed      []EventRequest   `json:"removed"`
	Grown        []EventRequest   `json:"grown"`
	AddedTotal   int              `json:"addedTotal"`
	RemovedTotal int              `json:"removedTotal"`
	GrownTotal   int              `json:"grownTotal"`
}

// EventRequest is one request added, removed or grown, as the run that made it (the later run;
// the earlier for a removed one) had it.
type EventRequest struct {
	URL            string `json:"url"`
	Type           string `json:"type"`
	Entity         string `json:"entity,omitempty"`
	ThirdParty     bool   `json:"thirdParty"`
	TransferBytes  int64  `json:"transferBytes"`
	BytesDelta     int64  `json:"bytesDelta"` // the later run's transfer size minus the earlier's (a removed request's is negative)
	RenderBlocking bool   `json:"renderBlocking"`
	LCP            bool   `json:"lcp"`
}

// Outcome is what a finished scan tells the alerting, read by the caller in the transaction that
// finishes it. Previous is the previous completed scan's results (nil for a site's first scan);
// Latest holds the kept runs, so a suspect page the confirmation re-audit cleared shows no
// regression. Each result's Explain (when kept) is what says what changed on a regressed page.
// BudgetsWereBroken is the site's budget state after the previous scan.
type Outcome struct {
	Workspace         EventRef
	Site              store.Site
	Scan              store.Scan
	ScanURL           string
	Publish           *store.Publish // the publish that started the scan; nil when none did
	Previous, Latest  []store.PageResult
	Violations        []analysis.Violation
	BudgetsWereBroken bool
	// Field is the field status of the scan's regressions, when a publish started it (Planner
	// reads it); FieldOnly the field-only regressions that are new since the previous scan.
	Field     []analysis.FieldVerdict
	FieldOnly []analysis.FieldRegression
}

// BudgetsBroken is the budget state the outcome leaves the site in, to keep for the next scan.
func (o Outcome) BudgetsBroken() bool {
	return o.Scan.Status == store.StatusComplete && len(o.Violations) > 0 || o.Scan.Status != store.StatusComplete && o.BudgetsWereBroken
}

// Triage is what the outcome of a completed scan leaves for the sites list: the metrics over
// budget, in the order first broken, and the regressions that survived confirmation.
func (o Outcome) Triage() store.Triage {
	t := store.Triage{BudgetsBroken: len(o.Violations) > 0, Broken: []string{}}
	for _, v := range o.Violations {
		if !slices.Contains(t.Broken, v.Metric) {
			t.Broken = append(t.Broken, v.Metric)
		}
	}
	if o.Previous != nil {
		t.Regressions = len(analysis.Regressions(o.Previous, o.Latest))
	}
	return t
}

// Events are the alerts a finished scan raises, at most one per type: regression.confirmed when
// regressions survived confirmation (one for the scan, not one per metric; with their field
// status), budget.broken or budget.recovered when the pass/fail state turned, scan.failed with
// its reason, field.regression when real users' figures crossed into a worse band since the
// previous scan while the lab saw nothing. A failed scan
// leaves the budget state as it was. newID makes each event's id.
func Events(o Outcome, now time.Time, newID func() string) []Event {
	base := Event{
		CreatedAt: now.UTC(),
		Workspace: o.Workspace,
		Site:      EventSite{ID: o.Site.ID, Name: o.Site.Name, Domain: o.Site.Domain},
		Scan:      EventScan{ID: o.Scan.ID, URL: o.ScanURL, Strategy: o.Scan.Strategy, Trigger: o.Scan.Trigger},
		Data:      EventDetail{Regressions: []analysis.Regression{}, Changes: []EventChange{}, Violations: []analysis.Violation{}},
	}
	if p := o.Publish; p != nil {
		at := p.PublishedOn.UTC()
		base.Scan.PublishedAt = &at
		if p.PublishedBy != "" {
			by := p.PublishedBy
			base.Scan.PublishedBy = &by
		}
	}
	event := func(kind string, d EventDetail) Event {
		e := base
		e.ID, e.Type, e.Data = newID(), kind, d
		return e
	}
	var out []Event
	if o.Scan.Status == store.StatusFailed {
		reason := strings.TrimSpace(o.Scan.Error)
		if reason == "" {
			reason = "the scan failed without a recorded reason"
		}
		d := base.Data
		d.Reason = reason
		return append(out, event(EventScanFailed, d))
	}
	if o.Scan.Status != store.StatusComplete {
		return nil
	}
	if o.Previous != nil {
		if changes := analysis.RegressedChanges(runPairs(o.Previous, o.Latest)); len(changes) > 0 {
			d := base.Data
			d.Regressions, d.Changes = regressed(changes)
			d.Field = o.Field
			out = append(out, event(EventRegressionConfirmed, d))
		}
	}
	switch broken := len(o.Violations) > 0; {
	case broken && !o.BudgetsWereBroken:
		d := base.Data
		d.Violations = o.Violations
		out = append(out, event(EventBudgetBroken, d))
	case !broken && o.BudgetsWereBroken:
		out = append(out, event(EventBudgetRecovered, base.Data))
	}
	if len(o.FieldOnly) > 0 {
		d := base.Data
		d.FieldOnly = o.FieldOnly
		out = append(out, event(EventFieldRegression, d))
	}
	return out
}

// runPairs pairs each page and strategy of latest with its run in previous.
func runPairs(previous, latest []store.PageResult) []store.RunPair {
	before := make(map[store.PageKey]store.PageResult, len(previous))
	for _, r := range previous {
		before[store.PageKey{PagePath: r.PagePath, Strategy: r.Strategy}] = r
	}
	out := make([]store.RunPair, 0, len(latest))
	for _, r := range latest {
		if b, ok := before[store.PageKey{PagePath: r.PagePath, Strategy: r.Strategy}]; ok {
			out = append(out, store.RunPair{Before: b, After: r})
		}
	}
	return out
}

// regressed are an event's regressions, worst first, and the changes of their pages in the
// order of each page's worst regression, bounded by MaxEventPages.
func regressed(changes []analysis.PageChange) ([]analysis.Regression, []EventChange) {
	var regs []analysis.Regression
	for _, c := range changes {
		regs = append(regs, c.Regressions...)
	}
	regs = worstFirst(regs)
	out := []EventChange{}
	for _, r := range regs {
		if len(out) == MaxEventPages {
			break
		}
		i := slices.IndexFunc(changes, func(c analysis.PageChange) bool { return c.PagePath == r.PagePath && c.Strategy == r.Strategy })
		if i < 0 || slices.ContainsFunc(out, func(e EventChange) bool { return e.PagePath == r.PagePath && e.Strategy == r.Strategy }) {
			continue
		}
		out = append(out, eventChange(changes[i]))
	}
	return regs, out
}

// eventChange is c as an event carries it, every text bounded.
func eventChange(c analysis.PageChange) EventChange {
	e := EventChange{PagePath: c.PagePath, Strategy: c.Strategy, Explained: c.Explained, Cause: clip(c.Sentence(), MaxEventText),
		Causes: make([]analysis.Cause, len(c.Causes)), AddedTotal: len(c.Added), RemovedTotal: len(c.Removed), GrownTotal: len(c.Grown)}
	if main, ok := c.Main(); ok {
		e.Confidence = main.Confidence
	}
	for i, x := range c.Causes {
		x.Sentence, x.Reasons = clip(x.Sentence, MaxEventText), slices.Clone(x.Reasons)
		for j := range x.Reasons {
			x.Reasons[j].Text, x.Reasons[j].URL = clip(x.Reasons[j].Text, MaxEventText), clip(x.Reasons[j].URL, MaxEventURL)
		}
		e.Causes[i] = x
	}
	e.Added = eventRequests(c.Added, func(r analysis.RequestChange) int64 { return r.After.TransferBytes })
	e.Removed = eventRequests(c.Removed, func(r analysis.RequestChange) int64 { return r.Before.TransferBytes })
	e.Grown = eventRequests(c.Grown, func(r analysis.RequestChange) int64 { return r.BytesDelta })
	return e
}

// eventRequests are the MaxEventRequests largest of list by size, in the order they started.
func eventRequests(list []analysis.RequestChange, size func(analysis.RequestChange) int64) []EventRequest {
	keep := make([]int, len(list))
	for i := range keep {
		keep[i] = i
	}
	slices.SortStableFunc(keep, func(i, j int) int { return cmp.Compare(size(list[j]), size(list[i])) })
	keep = keep[:min(len(keep), MaxEventRequests)]
	slices.Sort(keep)
	out := make([]EventRequest, 0, len(keep))
	for _, i := range keep {
		r := list[i]
		run := r.After
		if run == nil {
			run = r.Before
		}
		delta := r.BytesDelta
		switch {
		case r.Before == nil:
			delta = run.TransferBytes
		case r.After == nil:
			delta = -run.TransferBytes
		}
		out = append(out, EventRequest{URL: clip(r.URL, MaxEventURL), Type: r.Type, Entity: r.Entity, ThirdParty: r.ThirdParty,
			TransferBytes: run.TransferBytes, BytesDelta: delta, RenderBlocking: run.RenderBlocking, LCP: run.LCP})
	}
	return out
}

// worstFirst orders regressions by how far they fell, scores by points and vitals by their
// relative change, keeping the report's order among equals, so a message's top lines matter most.
func worstFirst(regs []analysis.Regression) []analysis.Regression {
	out := append([]analysis.Regression(nil), regs...)
	weight := func(r analysis.Regression) float64 {
		if m, _ := analysis.Lookup(r.Metric); m.Kind == analysis.Score {
			return r.From - r.To
		}
		if r.From <= 0 {
			return 100
		}
		return 100 * (r.To - r.From) / r.From
	}
	for i := 1; i < len(out); i++ { // insertion sort: stable and the lists are short
		for j := i; j > 0 && weight(out[j]) > weight(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
