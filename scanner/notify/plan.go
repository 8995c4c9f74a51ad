package notify

import (
	"context"
	"errors"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// PlanStore is what planning a finished scan's alerts reads, and the budget state it swaps.
type PlanStore interface {
	PreviousPairs(ctx context.Context, userID, scanID string) (store.ScanPairs, error)
	PageMetrics(ctx context.Context, userID, scanID string) ([]store.PageResult, error)
	Budgets(ctx context.Context, userID, siteID string) (map[string]store.Budget, error)
	AlertRules(ctx context.Context, userID, siteID string) ([]store.AlertRule, error)
	PublishesOfScans(ctx context.Context, userID string, scanIDs []string) (map[string]store.Publish, error)
	SwapBudgetState(ctx context.Context, siteID, scanID string, t store.Triage) (bool, error)
	Workspace(ctx context.Context, userID, workspaceID string) (store.Workspace, error)
	WorkspaceChannels(ctx context.Context, workspaceID string) ([]store.Channel, error)
}

// Planner turns a finished scan into the deliveries it causes: its Outcome (the previous
// completed scan, the kept results, the budgets, the publish), the events, and the channels
// that receive them. It is what scan completion calls to enqueue `delivery` jobs; the budget
// state is swapped here, so it belongs in the transaction that completes the scan.
type Planner struct {
	Store   PlanStore
	BaseURL string
	Now     func() time.Time
	// Field is the site's field data, for the field status of the regressions and the
	// field-only regressions (field.go); nil: the events carry no field figures.
	Field FieldSource
}

// Plan answers the dispatches of a finished (complete or failed) scan of site.
func (p *Planner) Plan(ctx context.Context, site store.Site, scan store.Scan) ([]Dispatch, error) {
	uid := site.UserID // a member of the site's workspace (RemoveMember keeps it so)
	ws, err := p.Store.Workspace(ctx, uid, site.WorkspaceID)
	if err != nil {
		return nil, err
	}
	o := Outcome{Workspace: EventRef{ID: ws.ID, Name: ws.Name}, Site: site, Scan: scan,
		ScanURL: p.BaseURL + "/sites/" + site.ID + "/scans/" + scan.ID}
	pubs, err := p.Store.PublishesOfScans(ctx, uid, []string{scan.ID})
	if err != nil {
		return nil, err
	}
	if pub, ok := pubs[scan.ID]; ok {
		o.Publish = &pub
	}
	if scan.Status == store.StatusComplete {
		if o.Latest, err = p.Store.PageMetrics(ctx, uid, scan.ID); err != nil {
			return nil, err
		}
		// The previous completed scan's runs and this one's, with what explains each, in one
		// read: the regressions and what changed on their pages (analysis.Compare).
		pairs, err := p.Store.PreviousPairs(ctx, uid, scan.ID)
		if err != nil {
			return nil, err
		}
		if pairs.From != nil {
			o.Previous = make([]store.PageResult, 0, len(pairs.Pairs))
			explains := make(map[store.PageKey]*store.Explain, len(pairs.Pairs))
			for _, pr := range pairs.Pairs {
				o.Previous = append(o.Previous, pr.Before)
				explains[store.PageKey{PagePath: pr.After.PagePath, Strategy: pr.After.Strategy}] = pr.After.Explain
			}
			for i, r := range o.Latest {
				o.Latest[i].Explain = explains[store.PageKey{PagePath: r.PagePath, Strategy: r.Strategy}]
			}
		}
		budgets, err := p.Store.Budgets(ctx, uid, site.ID)
		if err != nil {
			return nil, err
		}
		rules, err := p.Store.AlertRules(ctx, uid, site.ID)
		if err != nil {
			return nil, err
		}
		o.Violations = analysis.CheckBudgets(scan.Scores, o.Latest, budgets, rules)
		var previous time.Time
		if pairs.From != nil && pairs.From.CompletedAt != nil {
			previous = *pairs.From.CompletedAt
		}
		if err := fieldOutcome(ctx, p.Field, &o, previous, p.Now()); err != nil {
			return nil, err
		}
		if o.BudgetsWereBroken, err = p.Store.SwapBudgetState(ctx, site.ID, scan.ID, o.Triage()); err != nil {
			return nil, err
		}
	} else if scan.Status != store.StatusFailed {
		return nil, errors.New("notify: planning alerts of an unfinished scan")
	}
	// An event's id is its scan's and its type's (a scan causes at most one of each), so planning
	// a scan again finds the deliveries it already stored.
	events := Events(o, p.Now(), func() string { return "" })
	for i := range events {
		events[i].ID = "evt_" + scan.ID + "_" + events[i].Type
	}
	// Field-only regressions are alerted one by one, each with its own id, so one the daily
	// field check (or an earlier scan) already planned is not planned again.
	events = fieldEvents(events, site.ID)
	if len(events) == 0 {
		return nil, nil
	}
	channels, err := p.Store.WorkspaceChannels(ctx, site.WorkspaceID)
	if err != nil {
		return nil, err
	}
	return Route(site.WorkspaceID, events, channels), nil
}
