package memory

import (
	"context"
	"time"

	"sitepulse/store"
)

func (m *Store) SiteAndWorkspace(ctx context.Context, userID, siteID string) (store.Site, store.Workspace, error) {
	site, err := m.Site(ctx, userID, siteID)
	if err != nil {
		return site, store.Workspace{}, err
	}
	w, err := m.Workspace(ctx, userID, site.WorkspaceID)
	if err != nil {
		return store.Site{}, w, store.NotFound("site")
	}
	return site, w, nil
}

// SiteView is the reads it stands for, one after the other: the memory store has no round
// trips to save.
func (m *Store) SiteView(ctx context.Context, userID, siteID string, history, completed, publishes int) (store.SiteView, error) {
	v := store.SiteView{Metrics: map[string][]store.PageResult{}, Errors: []store.PageError{}, Publishes: []store.Publish{}}
	var err error
	if v.History, err = m.ScansOf(ctx, userID, siteID, history); err != nil {
		return v, err
	}
	for i := range v.History {
		v.History[i].Summary = nil
	}
	if v.Completed, err = m.CompletedScans(ctx, userID, siteID, completed); err != nil {
		return v, err
	}
	var ids []string
	for i, c := range v.Completed {
		if i < 2 {
			ids = append(ids, c.ID)
		}
	}
	if v.Metrics, err = m.PageMetricsOf(ctx, userID, ids); err != nil {
		return v, err
	}
	if len(v.History) > 0 {
		if v.Errors, err = m.PageErrors(ctx, userID, v.History[0].ID); err != nil {
			return v, err
		}
	}
	since := time.Time{}
	if n := len(v.Completed); n > 0 {
		since = *v.Completed[n-1].CompletedAt
		pubs, err := m.PublishesOfScans(ctx, userID, []string{v.Completed[0].ID})
		if err != nil {
			return v, err
		}
		if p, ok := pubs[v.Completed[0].ID]; ok {
			v.Publish = &p
		}
	}
	if v.Publishes, err = m.Publishes(ctx, userID, siteID, since, publishes); err != nil {
		return v, err
	}
	if v.Budgets, err = m.Budgets(ctx, userID, siteID); err != nil {
		return v, err
	}
	v.Rules, err = m.AlertRules(ctx, userID, siteID)
	return v, err
}
