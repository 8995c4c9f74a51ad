package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestWaitersOneReadForAll: however many checks wait, each notification costs one read of every
// awaited scan (no poll per waiter), a finished scan releases exactly its waiters, the others
// stay parked, and the goroutine stops once nobody waits.
func TestWaitersOneReadForAll(t *testing.T) {
	clock := scantest.NewClock(fixtureNow)
	var mu sync.Mutex
	states := map[string]store.Scan{}
	var reads [][]string
	read := func(_ context.Context, ids []string) (map[string]store.Scan, error) {
		mu.Lock()
		defer mu.Unlock()
		reads = append(reads, slices.Sorted(slices.Values(ids)))
		out := map[string]store.Scan{}
		for _, id := range ids {
			if sc, ok := states[id]; ok {
				out[id] = sc
			}
		}
		return out, nil
	}
	wake := make(chan struct{}, 1)
	ws := newScanWaiters(read, wake, nil, clock.NewTimer, 1000, slog.New(slog.DiscardHandler))
	const n = 100
	var waiters []*scanWaiter
	for i := range n {
		id := fmt.Sprintf("scan-%02d", i%10) // 10 scans, 10 waiters each
		mu.Lock()
		states[id] = store.Scan{ID: id, Status: store.StatusRunning}
		mu.Unlock()
		w, err := ws.add(id, fmt.Sprint("workspace-", i%3), fmt.Sprint("account-", i%3))
		must(t, err)
		waiters = append(waiters, w)
	}
	// Each add kicks a read (a scan may have finished before its waiter was parked; pending kicks
	// fold into one); wait for a read of all ten, then count from there. A kick read begun while
	// the waiters were still being added may still land after it, with fewer scans.
	storetest.WaitFor(t, "the kicks read every scan", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reads) > 0 && len(reads[len(reads)-1]) == 10
	})
	mu.Lock()
	states["scan-03"] = store.Scan{ID: "scan-03", Status: store.StatusComplete}
	delete(states, "scan-07") // deleted with its site
	before := len(reads)
	mu.Unlock()
	wake <- struct{}{}
	released := 0
	for i, w := range waiters {
		id := fmt.Sprintf("scan-%02d", i%10)
		if id != "scan-03" && id != "scan-07" {
			continue
		}
		select {
		case sc := <-w.done:
			if id == "scan-03" && sc.Status != store.StatusComplete || id == "scan-07" && sc.ID != "" {
				t.Errorf("waiter of %s got %+v", id, sc)
			}
			released++
		case <-time.After(storetest.Timeout()):
			t.Fatalf("the waiter of %s was not released", id)
		}
	}
	mu.Lock()
	after := reads[before:]
	mu.Unlock()
	// One read serves every waiter: some read since the wake holds all ten scans, and the reads
	// number a few (a late kick's and the wake's), never one per waiter.
	whole := slices.ContainsFunc(after, func(ids []string) bool { return len(ids) == 10 })
	if released != 20 || ws.waiting() != 80 || !whole || len(after) > 3 {
		t.Errorf("released %d, waiting %d, reads since the wake %v", released, ws.waiting(), after)
	}
	for i, w := range waiters {
		if id := fmt.Sprintf("scan-%02d", i%10); id != "scan-03" && id != "scan-07" {
			select {
			case sc := <-w.done:
				t.Errorf("the waiter of running %s was released: %+v", id, sc)
			default:
			}
			ws.remove(w)
		}
	}
	if ws.waiting() != 0 {
		t.Errorf("%d still waiting", ws.waiting())
	}
	// Nobody waits: the next wake ends the goroutine, which reads nothing more.
	wake <- struct{}{}
	storetest.WaitFor(t, "the goroutine to stop", func() bool { ws.mu.Lock(); defer ws.mu.Unlock(); return !ws.running })
}

// TestWaitersCaps: at most max waits in all and maxWaitersPerWorkspace per workspace.
func TestWaitersCaps(t *testing.T) {
	read := func(_ context.Context, ids []string) (map[string]store.Scan, error) { // every scan runs
		out := map[string]store.Scan{}
		for _, id := range ids {
			out[id] = store.Scan{ID: id, Status: store.StatusRunning}
		}
		return out, nil
	}
	clock := scantest.NewClock(fixtureNow)
	ws := newScanWaiters(read, nil, nil, clock.NewTimer, maxWaitersPerWorkspace+1, slog.New(slog.DiscardHandler))
	var held []*scanWaiter
	for i := range maxWaitersPerWorkspace {
		w, err := ws.add("s", "busy", fmt.Sprint("account-", i))
		must(t, err)
		held = append(held, w)
	}
	if _, err := ws.add("s", "busy", "another-account"); !errors.As(err, new(waitLimitError)) {
		t.Errorf("past the workspace's cap: %v", err)
	}
	w, err := ws.add("s", "other", "other-acct")
	must(t, err)
	if _, err := ws.add("s", "third", "third-acct"); !errors.As(err, new(waitLimitError)) {
		t.Errorf("past the process's cap: %v", err)
	}
	for _, h := range append(held, w) {
		ws.remove(h)
	}
	if ws.waiting() != 0 {
		t.Errorf("%d waiting", ws.waiting())
	}
}

// TestWaitersFairPerAccount (issue 44 item 1): two accounts with ten workspaces each cannot take
// every wait of the process (each stops at maxWaitersPerAccount), a tenant with none waiting
// still gets one once the others fill all but the reserve, and a refusal names the limit met.
func TestWaitersFairPerAccount(t *testing.T) {
	read := func(_ context.Context, ids []string) (map[string]store.Scan, error) {
		out := map[string]store.Scan{}
		for _, id := range ids {
			out[id] = store.Scan{ID: id, Status: store.StatusRunning}
		}
		return out, nil
	}
	clock := scantest.NewClock(fixtureNow)
	ws := newScanWaiters(read, nil, nil, clock.NewTimer, defaultMaxWaiters, slog.New(slog.DiscardHandler))
	limitOf := func(err error) string {
		var lim waitLimitError
		if errors.As(err, &lim) {
			return lim.limit
		}
		return fmt.Sprint(err)
	}
	fill := func(account string, workspaces, each int) (got int, refused map[string]int) {
		refused = map[string]int{}
		for w := range workspaces {
			for range each {
				if _, err := ws.add("s", fmt.Sprintf("%s-ws%d", account, w), account); err != nil {
					refused[limitOf(err)]++
				} else {
					got++
				}
			}
		}
		return got, refused
	}
	for _, a := range []string{"hostile-a", "hostile-b"} {
		got, refused := fill(a, 10, maxWaitersPerWorkspace)
		t.Logf("%s, 10 workspaces x %d waits: %d waiting, refused %v", a, maxWaitersPerWorkspace, got, refused)
		if got != maxWaitersPerAccount || refused[limitAccount] != 10*maxWaitersPerWorkspace-maxWaitersPerAccount {
			t.Errorf("%s: %d waiting, refused %v; want %d, the rest refused as the account's", a, got, refused, maxWaitersPerAccount)
		}
	}
	if _, err := ws.add("s", "third-ws", "third"); err != nil {
		t.Fatalf("a third tenant with no wait is refused: %v", err)
	}
	if _, err := ws.add("s", "hostile-a-ws0", "hostile-a"); limitOf(err) != limitWorkspace {
		t.Errorf("a full workspace's refusal names %q", limitOf(err))
	}
	// Accounts fill the process up to its reserve; one already waiting is refused as the
	// process's, one with none still gets a wait.
	n := ws.waiting()
	for i := 0; ws.waiting() < defaultMaxWaiters-defaultMaxWaiters/10; i++ {
		fill(fmt.Sprintf("filler-%d", i), 2, maxWaitersPerWorkspace)
	}
	t.Logf("%d waiting before the fillers, %d after", n, ws.waiting())
	if _, err := ws.add("s", "third-ws", "third"); limitOf(err) != limitProcess {
		t.Errorf("an account already waiting, in the reserve: %v", err)
	}
	if _, err := ws.add("s", "newcomer-ws", "newcomer"); err != nil {
		t.Errorf("a newcomer in the reserve is refused: %v", err)
	}
}
