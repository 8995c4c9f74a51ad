package notify

import (
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

// EventDetail is what changed: the confirmed regressions (worst first), the broken budgets,
// or why the scan failed. Lists are never null, so receivers can range over them.
type EventDetail struct {
	Regressions []analysis.Regression `json:"regressions"`
	Violations  []analysis.Violation  `json:"violations"`
	Reason      string                `json:"reason,omitempty"`
}

// Outcome is what a finished scan tells the alerting, read by the caller in the transaction that
// finishes it. Previous is the previous completed scan's results (nil for a site's first scan);
// Latest holds the kept runs, so a suspect page the confirmation re-audit cleared shows no
// regression. BudgetsWereBroken is the site's budget state after the previous scan.
type Outcome struct {
	Workspace         EventRef
	Site              store.Site
	Scan              store.Scan
	ScanURL           string
	Publish           *store.Publish // the publish that started the scan; nil when none did
	Previous, Latest  []store.PageResult
	Violations        []analysis.Violation
	BudgetsWereBroken bool
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
// regressions survived confirmation (one for the scan, not one per metric), budget.broken or
// budget.recovered when the pass/fail state turned, scan.failed with its reason. A failed scan
// leaves the budget state as it was. newID makes each event's id.
func Events(o Outcome, now time.Time, newID func() string) []Event {
	base := Event{
		CreatedAt: now.UTC(),
		Workspace: o.Workspace,
		Site:      EventSite{ID: o.Site.ID, Name: o.Site.Name, Domain: o.Site.Domain},
		Scan:      EventScan{ID: o.Scan.ID, URL: o.ScanURL, Strategy: o.Scan.Strategy, Trigger: o.Scan.Trigger},
		Data:      EventDetail{Regressions: []analysis.Regression{}, Violations: []analysis.Violation{}},
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
		if regs := analysis.Regressions(o.Previous, o.Latest); len(regs) > 0 {
			d := base.Data
			d.Regressions = worstFirst(regs)
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
