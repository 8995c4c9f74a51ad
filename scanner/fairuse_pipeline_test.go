package scanner

import (
	"context"
	"fmt"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"strings"
	"testing"
	"time"

	"sitepulse/store/storetest"

	"sitepulse/scanner/psi"
)

// One account that spends its daily budget waits with a clear message; another account's scan
// goes on and completes.
func TestAccountQuotaPipeline(t *testing.T) {
	onStores(t, storeTest{name: "a spent account waits, another completes", fn: func(t *testing.T, st store.Store) {
		jobs := &jobLog{Store: st, jobs: map[string]int64{}}
		r := newRig(t, jobs) // the owner's site: five pages, ten audits
		other := &rig{t: t, st: jobs, psi: r.psi, logs: r.logs}
		other.user = store.User{ID: store.NewID(), Email: "other-" + store.NewID()[:8] + "@example.com", PasswordHash: "x", CreatedAt: time.Now()}
		if err := jobs.CreateUser(context.Background(), other.user); err != nil {
			t.Fatal(err)
		}
		otherSite := other.addSite("Other", []string{"/", "/fast"})
		r.pool(func(c *PoolConfig) {
			c.Quota, c.Capacity = psi.NewAccountQuota(store.AuditLimits{Workspace: 4, Account: 1 << 30}, jobs, nil), psi.NewCapacity(psi.CapacityConfig{MaxInFlight: 1})
		})
		greedy := r.enqueue(r.site)
		if sc := other.wait(other.enqueue(otherSite).ID); sc.Status != store.StatusComplete {
			t.Errorf("the other account's scan: %s (%s), want complete", sc.Status, sc.Error)
		}
		var j store.Job
		if !storetest.Eventually(func() bool {
			var ok bool
			j, ok = jobs.job(t, greedy.ID)
			return ok && j.State == store.JobAvailable && j.Snoozes() > 0
		}) {
			t.Fatalf("the greedy scan was not snoozed; logs:\n%s", r.logs.String())
		}
		if !strings.Contains(j.LastError, "daily budget of 4 audits (USER_DAILY_AUDITS) is used up") || j.Attempt-j.Snoozes() != 0 {
			t.Errorf("job: %q after %d attempts and %d snoozes, want the budget named and no attempt spent", j.LastError, j.Attempt, j.Snoozes())
		}
		if results, errs := r.results(greedy.ID); len(results)+len(errs) != 4 {
			t.Errorf("%d audits stored for the greedy scan, want its budget of 4", len(results)+len(errs))
		}
	}})
}

// Two replicas on one Postgres share an account's daily budget: each pool has its own store
// connection and its own AccountQuota, and together they audit the greedy account's two scans
// no more than the limit, while another account's scan completes.
func TestAccountQuotaSharedByReplicas(t *testing.T) {
	const limit = 6
	stA, dsn := storetest.PostgresDSN(t)
	jobsA := &jobLog{Store: stA, jobs: map[string]int64{}}
	jobsB := &jobLog{Store: storetest.Open(t, dsn), jobs: map[string]int64{}}
	a := newRig(t, jobsA)
	b := &rig{t: t, st: jobsB, psi: scantest.NewInProcess("../testdata/psi"), user: a.user, logs: a.logs}
	greedyPages := []string{"/", "/about", "/blog/", "/pricing"} // 8 audits a scan
	first, second := a.addSite("Greedy one", greedyPages), a.addSite("Greedy two", greedyPages)
	other := &rig{t: t, st: jobsA, psi: a.psi, logs: a.logs, user: store.User{ID: quotaUser(t, jobsA, "other")}}
	otherSite := other.addSite("Other", []string{"/fast"})
	for _, r := range []*rig{a, b} {
		r.psi.DelayBetween(20*time.Millisecond, 60*time.Millisecond) // each replica is busy with its scan while the other starts
	}
	replica := func(r *rig, name string, st psi.AuditLedger) {
		r.pool(func(c *PoolConfig) {
			c.WorkerID, c.Workers, c.Quota, c.Capacity = name, 1, psi.NewAccountQuota(store.AuditLimits{Workspace: limit, Account: 1 << 30}, st, nil), psi.NewCapacity(psi.CapacityConfig{MaxInFlight: 1})
		})
	}
	scans := []store.Scan{a.enqueue(first), a.enqueue(second)}
	replica(a, "replica A", jobsA)
	running := func() bool {
		sc, err := jobsA.Scan(context.Background(), a.user.ID, scans[0].ID)
		return err == nil && sc.Status == store.StatusRunning
	}
	if !storetest.Eventually(running) {
		t.Fatalf("replica A did not start the first scan; logs:\n%s", a.logs.String())
	}
	replica(b, "replica B", jobsB) // A works one scan at a time: B takes the second
	if sc := other.wait(other.enqueue(otherSite).ID); sc.Status != store.StatusComplete {
		t.Errorf("the other account's scan: %s (%s), want complete", sc.Status, sc.Error)
	}
	for _, sc := range scans {
		if !storetest.Eventually(func() bool { return snoozed(t, sc.ID, jobsA, jobsB) }) {
			t.Fatalf("greedy scan %s was not snoozed; logs:\n%s", sc.ID, a.logs.String())
		}
	}
	audited := 0
	for _, sc := range scans {
		res, errs := a.results(sc.ID)
		audited += len(res) + len(errs)
	}
	greedy := func(r *rig) int {
		return r.psi.Total() - r.psi.Calls("/fast", "mobile") - r.psi.Calls("/fast", "desktop")
	}
	t.Logf("greedy account: %d audits stored, %d made by replica A and %d by replica B, budget %d", audited, greedy(a), greedy(b), limit)
	if audited != limit || greedy(a)+greedy(b) != limit {
		t.Errorf("%d audits stored and %d made for the greedy account, want its budget of %d across both replicas", audited, greedy(a)+greedy(b), limit)
	}
	if greedy(a) == 0 || greedy(b) == 0 {
		t.Errorf("replica A made %d audits and B %d: the test wants both to spend the one budget", greedy(a), greedy(b))
	}
	if used, err := jobsB.AuditsTaken(context.Background(), a.user.ID, time.Now()); err != nil || used.Workspace != limit {
		t.Errorf("audits taken in the store: %+v, %v; want %d", used, err, limit)
	}
}

// snoozed answers whether the scan's job, claimed by either replica, waits for the next day's
// budget with the budget named.
func snoozed(t *testing.T, scanID string, logs ...*jobLog) bool {
	for _, l := range logs {
		if j, ok := l.job(t, scanID); ok && j.State == store.JobAvailable && j.Snoozes() > 0 {
			if !strings.Contains(j.LastError, "USER_DAILY_AUDITS") {
				t.Errorf("job of %s: %q, want the budget named", scanID, j.LastError)
			}
			return true
		}
	}
	return false
}

// The third red team's first row: an account owning several workspaces, each with its own daily
// budget, spent the PSI key's whole day and every other tenant's scans waited for the next. Its
// audits across all its workspaces stop at the account's budget (ACCOUNT_AUDIT_SHARE), each of
// its scans snoozed with a message naming that budget, while another account's scan completes.
func TestAccountBudgetSpansWorkspaces(t *testing.T) {
	onStores(t, storeTest{name: "three workspaces of one account spend its one budget; another account's scan completes", fn: func(t *testing.T, st store.Store) {
		const budget = 12
		jobs := &jobLog{Store: st, jobs: map[string]int64{}}
		r := newRig(t, jobs) // the personal workspace's site: five pages, ten audits
		scans := []store.Scan{r.enqueue(r.site)}
		for i := range 2 {
			ws := store.Workspace{ID: store.NewID(), Name: fmt.Sprintf("Client %d", i+1), CreatedAt: time.Now()}
			if err := jobs.CreateWorkspace(context.Background(), ws, r.user.ID, 10); err != nil {
				t.Fatal(err)
			}
			site := store.Site{ID: store.NewID(), UserID: r.user.ID, WorkspaceID: ws.ID, Name: ws.Name, Domain: fmt.Sprintf("client%d.test", i+1),
				Pages: scantest.SamplePages(), CreatedAt: time.Now()}
			if err := jobs.CreateSite(context.Background(), site); err != nil {
				t.Fatal(err)
			}
			scans = append(scans, r.enqueue(site))
		}
		other := r.secondTenant("Other", []string{"/fast"})
		r.pool(func(c *PoolConfig) {
			c.Quota = psi.NewAccountQuota(store.AuditLimits{Workspace: 100, Account: budget}, jobs, nil)
			c.Capacity = psi.NewCapacity(psi.CapacityConfig{MaxInFlight: 1})
		})
		if sc := other.wait(other.enqueue(other.site).ID); sc.Status != store.StatusComplete {
			t.Errorf("the other account's scan: %s (%s), want complete", sc.Status, sc.Error)
		}
		audited := 0
		for _, sc := range scans {
			var j store.Job
			if !storetest.Eventually(func() bool {
				res, errs := r.results(sc.ID)
				var ok bool
				j, ok = jobs.job(t, sc.ID)
				got, _ := jobs.Scan(context.Background(), r.user.ID, sc.ID)
				return got.Status == store.StatusComplete || ok && j.State == store.JobAvailable && j.Snoozes() > 0 && len(res)+len(errs) < 10
			}) {
				t.Fatalf("scan %s neither completed nor waited; logs:\n%s", sc.ID, r.logs.String())
			}
			res, errs := r.results(sc.ID)
			audited += len(res) + len(errs)
			if got, _ := jobs.Scan(context.Background(), r.user.ID, sc.ID); got.Status != store.StatusComplete &&
				!strings.Contains(j.LastError, "daily budget of 12 audits across all their workspaces (ACCOUNT_AUDIT_SHARE) is used up") {
				t.Errorf("scan %s waits with %q, want the account's budget named", sc.ID, j.LastError)
			}
		}
		t.Logf("one account's three workspaces (30 audits queued): %d audits made, account budget %d", audited, budget)
		if audited != budget {
			t.Errorf("%d audits made across the account's three workspaces, want its budget of %d", audited, budget)
		}
	}})
}

// keyFreeAuditor is an auditor that calls no PSI key, as the local Lighthouse and runners.
type keyFreeAuditor struct{ Auditor }

func (keyFreeAuditor) CallsNoKey() {}

// A scan audited without the PSI key (the local Lighthouse, runners: issue 46) spends its
// workspace's daily budget only: an owner whose share of the key's day is 2 audits still has a
// scan of ten audits completed, and its audits leave that share whole.
func TestKeyFreeScanSpendsTheWorkspaceOnly(t *testing.T) {
	onStores(t, storeTest{name: "a key-free scan passes the account's share of the key", fn: func(t *testing.T, st store.Store) {
		jobs := &jobLog{Store: st, jobs: map[string]int64{}}
		r := newRig(t, jobs) // five pages, ten audits
		r.pool(func(c *PoolConfig) {
			c.Auditor = keyFreeAuditor{c.Auditor}
			c.Quota = psi.NewAccountQuota(store.AuditLimits{Workspace: 100, Account: 2}, jobs, func(context.Context, string) bool { return true })
		})
		if sc := r.wait(r.enqueue(r.site).ID); sc.Status != store.StatusComplete {
			t.Fatalf("the key-free scan: %s (%s), want complete past the account's 2 audits of the key; logs:\n%s", sc.Status, sc.Error, r.logs.String())
		}
		used, err := jobs.AuditsTaken(context.Background(), r.user.ID, time.Now()) // the site is in its owner's personal workspace
		if err != nil || used.Workspace != 10 || used.Account != 0 || used.Key != 0 {
			t.Errorf("usage %+v, %v; want the workspace's 10 audits and none of the account's or the key's", used, err)
		}
	}})
}
