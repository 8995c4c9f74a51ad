package handlers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"sitepulse/store"
)

// Budget checks that wait for a scan (waitSeconds) hold their request open until the scan
// finishes. They are parked in one scanWaiters per process: no goroutine per waiting request
// polls anything. While anyone waits, one goroutine reads the state of every awaited scan in a
// single store call (store.ScansByID) whenever the store announces a job (Postgres LISTEN, the
// memory store's signal: every scan that finishes, in any process, enqueues its alerts job),
// when a waiter is added (it may have finished just before), and on a slow fallback timer in
// case a notification was lost; it hands each finished scan to its waiters and stops when
// none is left.

// Caps of the waits: per workspace, per account (the API key's: one account with ten
// workspaces gets no more than maxWaitersPerAccount) and in all, the last tenth of which stays
// for accounts with none waiting. A wait refused by a cap is answered 429 with Retry-After and
// the limit it met.
const (
	defaultMaxWaiters      = 1000
	maxWaitersPerWorkspace = 50
	maxWaitersPerAccount   = 100
	waitFallback           = 10 * time.Second // the fallback read while anyone waits
	waitReadTimeout        = 10 * time.Second // one read of the awaited scans
)

// The limits a wait can meet, as a 429 names them.
const (
	limitWorkspace = "workspace"
	limitAccount   = "account"
	limitProcess   = "process"
)

// waitLimitError is add's refusal past a cap; limit is the one met.
type waitLimitError struct{ limit string }

func (e waitLimitError) Error() string {
	if e.limit == limitProcess {
		return "too many budget checks are waiting at once in this server process"
	}
	return "too many budget checks of this " + e.limit + " are waiting at once"
}

// scanWaiter is one request waiting for a scan. done receives the scan once it finished, or
// the zero Scan when it can no longer be read (deleted with its site); it is buffered, so the
// registry never blocks on a request that has stopped listening.
type scanWaiter struct {
	scanID, workspace, account string
	done                       chan store.Scan
}

type scanWaiters struct {
	read     func(ctx context.Context, ids []string) (map[string]store.Scan, error)
	wake     <-chan struct{} // the store's job notifications; nil: the fallback timer alone
	stopping <-chan struct{} // closed when the process shuts down; nil: never
	newTimer func(time.Duration) (<-chan time.Time, func() bool)
	every    time.Duration
	max      int
	log      *slog.Logger

	mu       sync.Mutex
	byScan   map[string]map[*scanWaiter]struct{}
	byTenant map[string]int // waits by workspace and by account (keys prefixed)
	n        int
	running  bool          // the goroutine runs
	kick     chan struct{} // a waiter was added: read at once
}

func newScanWaiters(read func(context.Context, []string) (map[string]store.Scan, error), wake, stopping <-chan struct{},
	newTimer func(time.Duration) (<-chan time.Time, func() bool), max int, log *slog.Logger) *scanWaiters {
	return &scanWaiters{read: read, wake: wake, stopping: stopping, newTimer: newTimer, every: waitFallback, max: max, log: log,
		byScan: map[string]map[*scanWaiter]struct{}{}, byTenant: map[string]int{}, kick: make(chan struct{}, 1)}
}

// realTimer is time.NewTimer for the waits.
func realTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

// add parks a waiter for scanID on behalf of a workspace and an account, or refuses past a cap
// (waitLimitError). The caller removes it when it stops waiting, whatever happened.
func (ws *scanWaiters) add(scanID, workspace, account string) (*scanWaiter, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := &scanWaiter{scanID: scanID, workspace: "w:" + workspace, account: "a:" + account, done: make(chan store.Scan, 1)}
	reserve := ws.max / 10 // for accounts with none waiting
	switch {
	case ws.byTenant[w.workspace] >= maxWaitersPerWorkspace:
		return nil, waitLimitError{limitWorkspace}
	case ws.byTenant[w.account] >= maxWaitersPerAccount:
		return nil, waitLimitError{limitAccount}
	case ws.n >= ws.max, ws.byTenant[w.account] > 0 && ws.n >= ws.max-reserve:
		return nil, waitLimitError{limitProcess}
	}
	if ws.byScan[scanID] == nil {
		ws.byScan[scanID] = map[*scanWaiter]struct{}{}
	}
	ws.byScan[scanID][w] = struct{}{}
	ws.byTenant[w.workspace]++
	ws.byTenant[w.account]++
	ws.n++
	select {
	case ws.kick <- struct{}{}:
	default:
	}
	if !ws.running {
		ws.running = true
		go ws.loop()
	}
	return w, nil
}

// remove forgets a waiter; a waiter already released is forgotten already.
func (ws *scanWaiters) remove(w *scanWaiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if _, ok := ws.byScan[w.scanID][w]; ok {
		ws.forget(w)
	}
}

// forget drops a parked waiter; the caller holds mu.
func (ws *scanWaiters) forget(w *scanWaiter) {
	delete(ws.byScan[w.scanID], w)
	if len(ws.byScan[w.scanID]) == 0 {
		delete(ws.byScan, w.scanID)
	}
	for _, k := range []string{w.workspace, w.account} {
		if ws.byTenant[k]--; ws.byTenant[k] <= 0 {
			delete(ws.byTenant, k)
		}
	}
	ws.n--
}

// waiting is how many requests wait (tests).
func (ws *scanWaiters) waiting() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.n
}

// loop is the one goroutine: it reads the awaited scans on every notification, kick and
// fallback tick, until nobody waits or the process shuts down (then every waiter answers by
// itself).
func (ws *scanWaiters) loop() {
	for {
		tick, stop := ws.newTimer(ws.every)
		select {
		case <-ws.wake:
		case <-ws.kick:
		case <-tick:
		case <-ws.stopping:
			stop()
			ws.mu.Lock()
			ws.running = false
			ws.mu.Unlock()
			return
		}
		stop()
		if !ws.check() {
			return
		}
	}
}

// check reads every awaited scan at once and releases the waiters of those that finished or
// are gone. It answers false, having marked the goroutine stopped, when nobody waits.
func (ws *scanWaiters) check() bool {
	ws.mu.Lock()
	ids := make([]string, 0, len(ws.byScan))
	for id := range ws.byScan {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		ws.running = false
		ws.mu.Unlock()
		return false
	}
	ws.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), waitReadTimeout)
	got, err := ws.read(ctx, ids)
	cancel()
	if err != nil {
		ws.log.Warn("budget check waits: reading the awaited scans failed; retrying at the next notification", "scans", len(ids), "err", err)
		return true
	}

	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, id := range ids {
		sc, found := got[id]
		if found && !sc.Status.Terminal() {
			continue
		}
		for w := range ws.byScan[id] {
			w.done <- sc // the zero Scan when it is gone
			ws.forget(w)
		}
	}
	if ws.n == 0 {
		ws.running = false
		return false
	}
	return true
}
