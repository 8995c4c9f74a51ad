package memory

import (
	"context"

	"sitepulse/store"
)

var _ store.JobWaker = (*Store)(nil)

// WakeOnJobs is the memory store's signal, its twin of Postgres's LISTEN: the returned channel
// receives whenever a job is enqueued (every finished scan enqueues its alerts job, so a scan
// that ends wakes it too), until ctx ends. Sends never block: one pending wake-up stands for
// many. onError is never called: nothing here can fail.
func (m *Store) WakeOnJobs(ctx context.Context, onError func(error)) (<-chan struct{}, error) {
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	if m.wakes == nil {
		m.wakes = map[chan struct{}]struct{}{}
	}
	m.wakes[ch] = struct{}{}
	m.mu.Unlock()
	context.AfterFunc(ctx, func() {
		m.mu.Lock()
		delete(m.wakes, ch)
		m.mu.Unlock()
	})
	return ch, nil
}

// wakeAll pokes every WakeOnJobs channel; the caller holds m.mu.
func (m *Store) wakeAll() {
	for ch := range m.wakes {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
