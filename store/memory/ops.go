package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	"sitepulse/store"
)

// JobFigures counts the live jobs as Postgres' GROUP BY does.
func (m *Store) JobFigures(ctx context.Context, now time.Time) ([]store.JobFigure, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	type key struct {
		kind  string
		state store.JobState
	}
	byKey := map[key]*store.JobFigure{}
	for _, j := range m.jobs {
		if j.State != store.JobAvailable && j.State != store.JobRunning {
			continue
		}
		k := key{j.Kind, j.State}
		f := byKey[k]
		if f == nil {
			f = &store.JobFigure{Kind: j.Kind, State: j.State}
			byKey[k] = f
		}
		f.Jobs++
		if j.State == store.JobAvailable && !j.RunAt.After(now) && (f.OldestRunnable.IsZero() || j.RunAt.Before(f.OldestRunnable)) {
			f.OldestRunnable = j.RunAt
		}
	}
	out := make([]store.JobFigure, 0, len(byKey))
	for _, f := range byKey {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b store.JobFigure) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.State, b.State))
	})
	return out, nil
}
