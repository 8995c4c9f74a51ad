package memory

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"sitepulse/store"
)

func (m *Store) AppendLog(ctx context.Context, events ...store.LogEvent) ([]store.LogEvent, error) {
	out := make([]store.LogEvent, len(events))
	for i, e := range events {
		e.Details = maps.Clone(e.Details)
		e.Normalize()
		if err := e.Validate(); err != nil {
			return nil, err
		}
		out[i] = e
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range out {
		m.logSeq++
		out[i].Seq = m.logSeq
		e := out[i]
		e.Details = maps.Clone(e.Details)
		m.securityLog = append(m.securityLog, e)
	}
	return out, nil
}

func (m *Store) LogOf(ctx context.Context, f store.LogFilter) ([]store.LogEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.LogEvent{}
	for _, e := range m.securityLog {
		if f.Match(e) && (f.After == nil || f.After.Before(e)) {
			e.Details = maps.Clone(e.Details)
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b store.LogEvent) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return cmp.Compare(b.Seq, a.Seq)
	})
	return out[:min(len(out), f.PageLimit())], nil
}

func (m *Store) PruneLog(ctx context.Context, before time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.securityLog)
	m.securityLog = slices.DeleteFunc(m.securityLog, func(e store.LogEvent) bool { return e.At.Before(before) })
	return n - len(m.securityLog), nil
}
