package storetest_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// testAuditBudget: USER_DAILY_AUDITS counted in the store, so replicas share it. The account
// budget is high here: testAccountAuditBudget is its own.
func testAuditBudget(t *testing.T, s store.Store) {
	ann, bob := newUser(t, s, "ann@example.com"), newUser(t, s, "bob@example.com")
	late := time.Date(2026, 11, 24, 23, 59, 59, 0, time.FixedZone("CET", 3600)) // 22:59:59 UTC
	const limit = 7

	// 40 takers at once, each trying 3 times: exactly the limit is granted.
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				ok, err := s.TakeAudit(ctx, ann.ID, late, wsLimit(limit))
				if err != nil {
					t.Error(err)
				}
				if ok {
					granted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if granted.Load() != limit {
		t.Fatalf("%d audits granted, want the limit of %d", granted.Load(), limit)
	}
	if used, err := s.AuditsTaken(ctx, ann.ID, late); err != nil || used.Workspace != limit || used.Account != limit {
		t.Errorf("audits taken: %+v, %v; want %d of the workspace and of its owner", used, err, limit)
	}

	tests := []struct {
		name   string
		userID string
		at     time.Time
		limit  int
		want   bool
	}{
		{"a spent budget grants nothing more that day", ann.ID, late.Add(-20 * time.Hour), limit, false},
		{"another account has its own budget", bob.ID, late, limit, true},
		{"the next UTC day starts afresh", ann.ID, late.Add(time.Hour + time.Second), limit, true},
		{"a limit of 0 grants nothing", bob.ID, late, 0, false},
		{"a higher limit grants more of the same day", ann.ID, late, limit + 1, true},
	}
	for _, tt := range tests {
		if got, err := s.TakeAudit(ctx, tt.userID, tt.at, wsLimit(tt.limit)); err != nil || got != tt.want {
			t.Errorf("%s: %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	next := late.Add(time.Hour + time.Second)
	if used, _ := s.AuditsTaken(ctx, ann.ID, next); used.Workspace != 1 {
		t.Errorf("the next day: %d taken, want 1", used)
	}
	if used, _ := s.AuditsTaken(ctx, ann.ID, late); used.Workspace != limit+1 {
		t.Errorf("the day before, once the next began: %d taken, want %d", used, limit+1)
	}
	// Two days later the take forgets the days before yesterday: the first day reads 0.
	if ok, err := s.TakeAudit(ctx, ann.ID, late.AddDate(0, 0, 2), wsLimit(limit)); !ok || err != nil {
		t.Errorf("two days later: %v, %v", ok, err)
	}
	if used, _ := s.AuditsTaken(ctx, ann.ID, late); used != (store.AuditUsage{}) {
		t.Errorf("a day before yesterday: %+v taken, want none (forgotten)", used)
	}

	_, err := s.TakeAudit(ctx, store.NewID(), late, wsLimit(limit))
	wantErr(t, err, store.ErrNotFound)
	_, err = s.TakeAudit(ctx, "not-a-uuid", late, wsLimit(limit))
	wantErr(t, err, store.ErrNotFound)
	if used, err := s.AuditsTaken(ctx, "not-a-uuid", late); used != (store.AuditUsage{}) || err != nil {
		t.Errorf("an unknown workspace's audits: %+v, %v; want none", used, err)
	}
}

// wsLimit is a workspace budget of n under an account budget that never binds.
func wsLimit(n int) store.AuditLimits { return store.AuditLimits{Workspace: n, Account: 1 << 30} }

// testAccountAuditBudget: an account's audits across every workspace it owns, or created that
// day, stay under its budget (the share of the PSI key's quota one account may spend), and the
// count outlives a deleted workspace. The third red team owned ten workspaces of 6,000 audits
// each against one key's 25,000, and deleting and recreating a workspace gave it a fresh budget.
func testAccountAuditBudget(t *testing.T, s store.Store) {
	day := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	limits := store.AuditLimits{Workspace: 5, Account: 8}
	ann, bob := newUser(t, s, "ann@example.com"), newUser(t, s, "bob@example.com")
	workspace := func(owner store.User, name string, at time.Time) string {
		t.Helper()
		w := store.Workspace{ID: store.NewID(), Name: name, CreatedAt: at}
		must(t, s.CreateWorkspace(ctx, w, owner.ID, 10))
		return w.ID
	}
	take := func(ws string, at time.Time) bool {
		t.Helper()
		ok, err := s.TakeAudit(ctx, ws, at, limits)
		must(t, err)
		return ok
	}
	second, third := workspace(ann, "Second", day.Add(-48*time.Hour)), workspace(ann, "Third", day.Add(-48*time.Hour))
	for i := range 5 {
		if !take(ann.ID, day) {
			t.Fatalf("audit %d of ann's personal workspace refused", i+1)
		}
	}
	if take(ann.ID, day) {
		t.Error("a sixth audit of a workspace with a budget of 5 was granted")
	}
	for i := range 3 {
		if !take(second, day) {
			t.Fatalf("audit %d of ann's second workspace refused: ann has spent %d of 8", i+1, 5+i)
		}
	}
	if take(second, day) || take(third, day) {
		t.Error("ann's ninth audit was granted: her account's budget is 8 across her workspaces")
	}
	if used, err := s.AuditsTaken(ctx, second, day); err != nil || used != (store.AuditUsage{Workspace: 3, Account: 8, Key: 8, Askers: 1}) {
		t.Errorf("second workspace's usage %+v, %v; want 3 of its own, 8 of its owner's", used, err)
	}
	if !take(bob.ID, day) {
		t.Error("bob's audit refused: his account has its own budget")
	}
	// Deleting a workspace and making another hands out no fresh budget the same day.
	must(t, s.DeleteWorkspace(ctx, ann.ID, second))
	fresh := workspace(ann, "Second again", day)
	if take(fresh, day) {
		t.Error("a workspace recreated the same day was granted an audit: ann's spent budget outlives the one she deleted")
	}
	if !take(fresh, day.Add(24*time.Hour)) {
		t.Error("the next UTC day, ann's recreated workspace was refused")
	}

	// Every owner's account pays for a workspace's audits, and the account that created it pays
	// on the day it did, even once it has left: carol makes a workspace, gives it to dave, leaves.
	carol, dave := newUser(t, s, "carol@example.com"), newUser(t, s, "dave@example.com")
	handed := workspace(carol, "Handed over", day)
	tok := store.NewID()
	must(t, s.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: tok, WorkspaceID: handed, Email: dave.Email, Role: store.RoleOwner,
		InvitedBy: carol.ID, CreatedAt: day, ExpiresAt: day.Add(store.InvitationTTL)}))
	_, err := s.AcceptInvitation(ctx, tok, dave.ID, dave.Email, day)
	must(t, err)
	must(t, s.RemoveMember(ctx, handed, carol.ID))
	limits.Workspace = 100 // the account's budget binds from here on
	for i := range 8 {
		if !take(carol.ID, day) {
			t.Fatalf("carol's audit %d refused", i+1)
		}
	}
	if take(handed, day) {
		t.Error("a workspace carol created today was granted an audit with carol's budget spent")
	}
	if !take(handed, day.Add(24*time.Hour)) {
		t.Error("the next day the handed-over workspace is dave's alone, and was refused")
	}
	if used, _ := s.AuditsTaken(ctx, dave.ID, day.Add(24*time.Hour)); used.Account != 1 {
		t.Errorf("dave's account spent %d the next day, want the handed-over workspace's 1", used.Account)
	}

	// 40 takers at once over one account's three workspaces: exactly the account's budget.
	erin := newUser(t, s, "erin@example.com")
	spaces := []string{erin.ID, workspace(erin, "Two", day), workspace(erin, "Three", day)}
	var granted atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				ok, err := s.TakeAudit(ctx, spaces[i%3], day, store.AuditLimits{Workspace: 100, Account: 7})
				if err != nil {
					t.Error(err)
				}
				if ok {
					granted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if granted.Load() != 7 {
		t.Errorf("%d audits granted over one account's three workspaces, want its budget of 7", granted.Load())
	}
	if ok, _ := s.TakeAudit(ctx, bob.ID, day, store.AuditLimits{Workspace: 5, Account: 0}); ok {
		t.Error("an account budget of 0 granted an audit")
	}
}

// BenchmarkTakeAudit is the daily budgets' cost per audit on each store (the workspace's and its
// owner's account's): one call on Postgres (take_audit), taken by 4 goroutines per CPU on one
// workspace, the worst case: every take waits on the same rows.
//
//	DATABASE_URL=... go test ./store/storetest/ -run '^$' -bench TakeAudit
func BenchmarkTakeAudit(b *testing.B) {
	for _, be := range storetest.Backends(b) {
		b.Run(be.Name, func(b *testing.B) {
			s := be.Open(b)
			u := newUser(b, s, "bench@example.com")
			now := time.Now()
			b.SetParallelism(4) // 4 x GOMAXPROCS goroutines
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.TakeAudit(ctx, u.ID, now, store.AuditLimits{Workspace: 1 << 30, Account: 1 << 30}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// testKeyDayShares: the key's day shared (issue 44). Twenty sign-ups audit at once, each under
// its own budget of 30 audits of a 100-audit day: past the mark (70) each takes at most its
// share of what is left before the reserve ((100-10-70)/20 = 1), the reserve of 10 stays whole,
// and newcomers then get their first scans (4 audits each) from it, until the day's end.
func testKeyDayShares(t *testing.T, s store.Store) {
	day := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	limits := store.AuditLimits{Workspace: 1000, Account: 30, Day: 100, Mark: 70, Reserve: 10, Newcomer: 4}
	take := func(ws string) bool {
		t.Helper()
		ok, err := s.TakeAudit(ctx, ws, day, limits)
		must(t, err)
		return ok
	}
	var early []string
	for i := range 20 {
		u := newUser(t, s, fmt.Sprintf("signup%d@example.com", i))
		early = append(early, u.ID)
		if !take(u.ID) {
			t.Fatalf("sign-up %d's first audit refused", i+1)
		}
	}
	var granted atomic.Int64
	var wg sync.WaitGroup
	for _, ws := range early {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ok, err := s.TakeAudit(ctx, ws, day, limits)
				if err != nil {
					t.Error(err)
				}
				if !ok {
					return
				}
				granted.Add(1)
			}
		}()
	}
	wg.Wait()
	used, err := s.AuditsTaken(ctx, early[0], day)
	must(t, err)
	late := 0
	for i, ws := range early {
		u, _ := s.AuditsTaken(ctx, ws, day)
		if u.Late > 1 || u.Account > limits.Account || u.Late == 0 && u.Account < limits.Account {
			t.Errorf("sign-up %d took %d audits, %d past the mark; want at most 30, and its share of 1 past the mark unless its budget ran out first", i+1, u.Account, u.Late)
		}
		late += u.Late
	}
	if used.Key != 70+late || used.Key > 90 || used.Askers != 20 || 20+int(granted.Load()) != used.Key {
		t.Errorf("the twenty spent %d of the key's day (the store says %d, %d askers, %d past the mark), want the mark's 70 and a share of 1 each at most, the reserve of 10 untouched",
			20+granted.Load(), used.Key, used.Askers, late)
	}
	// Newcomers: a first scan of 4 audits each while the day lasts, then nothing.
	var got, want []int
	for i, left := 0, 100-used.Key; i < 3; i, left = i+1, left-min(left, 4) {
		ws := newUser(t, s, fmt.Sprintf("newcomer%d@example.com", i)).ID
		n := 0
		for take(ws) {
			n++
		}
		got, want = append(got, n), append(want, min(left, 4))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || got[0] != 4 || got[1] != 4 {
		t.Errorf("newcomers' audits from the reserve: %v, want %v (a first scan each while the reserve holds one)", got, want)
	}
	if used, _ := s.AuditsTaken(ctx, early[0], day); used.Key != 100 {
		t.Errorf("the key's day: %d audits taken, want its 100 and not one more", used.Key)
	}
	if take(early[0]) || take(newUser(t, s, "late@example.com").ID) {
		t.Error("an audit was granted past the key's day")
	}
	// The next day starts afresh: every account below the mark again.
	if ok, err := s.TakeAudit(ctx, early[0], day.Add(24*time.Hour), limits); !ok || err != nil {
		t.Errorf("the next day: %v, %v; want the audit", ok, err)
	}
}

// BenchmarkTakeAuditManyAccounts is the same cost with each goroutine its own account and the
// key's day shared (issue 44): every take also locks the key's day row, so takes of different
// accounts now queue on it.
//
//	DATABASE_URL=... go test ./store/storetest/ -run '^$' -bench TakeAuditManyAccounts -benchtime=2s
func BenchmarkTakeAuditManyAccounts(b *testing.B) {
	for _, be := range storetest.Backends(b) {
		b.Run(be.Name, func(b *testing.B) {
			s := be.Open(b)
			users := make([]store.User, 64)
			for i := range users {
				users[i] = newUser(b, s, fmt.Sprintf("bench%d@example.com", i))
			}
			now := time.Now()
			limits := store.AuditLimits{Workspace: 1 << 30, Account: 1 << 30, Day: 1 << 30, Mark: 1 << 29, Reserve: 1 << 20, Newcomer: 100}
			var next atomic.Int64
			b.SetParallelism(4) // 4 x GOMAXPROCS goroutines
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				u := users[int(next.Add(1)-1)%len(users)]
				for pb.Next() {
					if _, err := s.TakeAudit(ctx, u.ID, now, limits); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// testKeyFreeAudits: an audit that spends no PSI key (local Lighthouse, a runner: issue 46)
// counts against its workspace's budget only. Its owner's account budget and the key's day are
// the key's: a workspace of 2,000 sites audited on runners is not stopped by its owner's share
// of a key it never calls, and its audits leave that share whole for the owner's PSI audits.
func testKeyFreeAudits(t *testing.T, s store.Store) {
	day := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	keyed := store.AuditLimits{Workspace: 6, Account: 3, Day: 100, Mark: 70, Reserve: 10, Newcomer: 2}
	free := keyed
	free.KeyFree = true
	ann := newUser(t, s, "ann@example.com")
	runners := store.Workspace{ID: store.NewID(), Name: "On runners", CreatedAt: day.Add(-48 * time.Hour)}
	must(t, s.CreateWorkspace(ctx, runners, ann.ID, 10))
	take := func(ws string, l store.AuditLimits) bool {
		t.Helper()
		ok, err := s.TakeAudit(ctx, ws, day, l)
		must(t, err)
		return ok
	}
	for i := range 5 {
		if !take(runners.ID, free) {
			t.Fatalf("key-free audit %d refused: the account's budget of 3 is the key's, not the runners'", i+1)
		}
	}
	if used, err := s.AuditsTaken(ctx, runners.ID, day); err != nil || used != (store.AuditUsage{Workspace: 5}) {
		t.Errorf("after 5 key-free audits the usage is %+v, %v; want 5 of the workspace's and nothing of the account's or the key's", used, err)
	}
	for i := range 3 {
		if !take(ann.ID, keyed) {
			t.Fatalf("PSI audit %d of ann's personal workspace refused: her key-free audits spent none of her account's 3", i+1)
		}
	}
	if take(ann.ID, keyed) {
		t.Error("a fourth PSI audit was granted past the account's budget of 3")
	}
	if !take(runners.ID, free) {
		t.Error("a key-free audit was refused once the account's PSI budget was spent")
	}
	if take(runners.ID, free) {
		t.Error("a seventh key-free audit was granted past the workspace's budget of 6")
	}
	if used, err := s.AuditsTaken(ctx, runners.ID, day); err != nil || used.Workspace != 6 || used.Key != 3 || used.Askers != 1 {
		t.Errorf("usage %+v, %v; want the workspace's 6, the key's 3 by one account", used, err)
	}
	if take(runners.ID, keyed) {
		t.Error("a PSI audit was granted past the workspace's budget of 6, which counts every audit")
	}
	if ok, err := s.TakeAudit(ctx, store.NewID(), day, free); ok || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a key-free audit of an unknown workspace: %v, %v; want not found", ok, err)
	}
	if ok, err := s.TakeAudit(ctx, runners.ID, day.Add(24*time.Hour), free); err != nil || !ok {
		t.Errorf("the next UTC day's first key-free audit: %v, %v; want granted", ok, err)
	}
}
