package storetest_test

import (
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestRunners is the contract of the runner queue (store.Runners) on both stores: tokens,
// leases, heartbeats, expiry and the refusal of results from leases that are not the runner's.
func TestRunners(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			for name, fn := range map[string]func(*testing.T, store.Store){
				"tokens are listed by workspace, found by hash, and stop when revoked":                     testRunnerTokens,
				"a lease is of the token's workspace, expires, goes to another runner and refuses the old": testRunnerLeases,
				"a site's locations and a re-audit's avoided runner choose who leases":                     testRunnerChoice,
			} {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					fn(t, b.Open(t))
				})
			}
		})
	}
}

func newRunnerToken(t *testing.T, s store.Store, workspaceID, name string) (store.RunnerToken, string) {
	t.Helper()
	secret, hash := store.NewSecret("rnr_")
	tok := store.RunnerToken{ID: store.NewID(), WorkspaceID: workspaceID, Name: name, TokenHash: hash, Prefix: secret[:10], CreatedAt: t0}
	must(t, s.CreateRunnerToken(ctx, tok))
	return tok, secret
}

func runnerAudit(t *testing.T, s store.Store, site store.Site, scan store.Scan, path string, at time.Time) store.RunnerAudit {
	t.Helper()
	a := store.RunnerAudit{ID: store.NewID(), WorkspaceID: site.WorkspaceID, SiteID: site.ID, ScanID: scan.ID,
		PageURL: "https://" + site.Domain + path, Strategy: store.StrategyMobile, CreatedAt: at}
	if a.WorkspaceID == "" {
		a.WorkspaceID = site.UserID
	}
	must(t, s.EnqueueRunnerAudit(ctx, a))
	return a
}

func testRunnerTokens(t *testing.T, s store.Store) {
	a, b := newUser(t, s, "a@example.com"), newUser(t, s, "b@example.com")
	tok, secret := newRunnerToken(t, s, a.ID, "office")
	got, err := s.RunnerTokenByHash(ctx, store.HashSecret(secret))
	must(t, err)
	if got.ID != tok.ID || got.WorkspaceID != a.ID || got.Operator() {
		t.Fatalf("token by hash: %+v", got)
	}
	list, err := s.RunnerTokens(ctx, a.ID)
	must(t, err)
	if len(list) != 1 || list[0].ID != tok.ID || list[0].Prefix != secret[:10] {
		t.Fatalf("A's tokens: %+v", list)
	}
	if list, _ := s.RunnerTokens(ctx, b.ID); len(list) != 0 {
		t.Fatalf("B sees A's tokens: %+v", list)
	}
	if ok, _ := s.RunnersServe(ctx, a.ID); !ok {
		t.Fatal("A's workspace has a token but runners do not serve it")
	}
	if ok, _ := s.RunnersServe(ctx, b.ID); ok {
		t.Fatal("runners serve B without a token of B's or the operator's")
	}
	// B cannot revoke A's token; A can, once.
	wantErr(t, s.RevokeRunnerToken(ctx, b.ID, tok.ID, t0), store.ErrNotFound)
	wantErr(t, s.RevokeRunnerToken(ctx, "", tok.ID, t0), store.ErrNotFound)
	must(t, s.RevokeRunnerToken(ctx, a.ID, tok.ID, t0))
	wantErr(t, s.RevokeRunnerToken(ctx, a.ID, tok.ID, t0), store.ErrNotFound)
	_, err = s.RunnerTokenByHash(ctx, store.HashSecret(secret))
	wantErr(t, err, store.ErrNotFound)
	if ok, _ := s.RunnersServe(ctx, a.ID); ok {
		t.Fatal("a revoked token still makes runners serve A")
	}
	// An operator's token serves every workspace.
	op, _ := newRunnerToken(t, s, "", "fleet")
	if !op.Operator() {
		t.Fatal("a token of no workspace is not the operator's")
	}
	if ok, _ := s.RunnersServe(ctx, b.ID); !ok {
		t.Fatal("an operator's token does not serve B")
	}
	if list, _ := s.RunnerTokens(ctx, ""); len(list) != 1 || list[0].ID != op.ID {
		t.Fatalf("operator's tokens: %+v", list)
	}
}

func testRunnerLeases(t *testing.T, s store.Store) {
	a, b := newUser(t, s, "a@example.com"), newUser(t, s, "b@example.com")
	site := newSite(t, s, a, "a site")
	scan := enqueue(t, s, site, t0)
	tokA, _ := newRunnerToken(t, s, a.ID, "a")
	tokB, _ := newRunnerToken(t, s, b.ID, "b")
	au := runnerAudit(t, s, site, scan, "/", t0)

	// B's runner sees nothing of A's.
	_, err := s.LeaseRunnerAudit(ctx, tokB, "b1", "", t0, t0.Add(time.Minute))
	wantErr(t, err, store.ErrNotFound)

	l1, err := s.LeaseRunnerAudit(ctx, tokA, "one", "eu", t0, t0.Add(time.Minute))
	must(t, err)
	if l1.ID != au.ID || l1.LeaseID == "" || l1.PageURL != au.PageURL || l1.State != store.RunnerLeased || l1.Runner != store.RunnerKey(tokA.ID, "one") {
		t.Fatalf("lease: %+v", l1)
	}
	// Held: nobody else gets it.
	_, err = s.LeaseRunnerAudit(ctx, tokA, "two", "eu", t0.Add(30*time.Second), t0.Add(2*time.Minute))
	wantErr(t, err, store.ErrNotFound)
	// A heartbeat extends it; B's token cannot, nor a made-up lease.
	must(t, s.ExtendRunnerLease(ctx, tokA, l1.LeaseID, t0.Add(50*time.Second), t0.Add(2*time.Minute)))
	wantErr(t, s.ExtendRunnerLease(ctx, tokB, l1.LeaseID, t0.Add(50*time.Second), t0.Add(3*time.Minute)), store.ErrGone)
	wantErr(t, s.ExtendRunnerLease(ctx, tokA, store.NewID(), t0.Add(50*time.Second), t0.Add(3*time.Minute)), store.ErrGone)
	wantErr(t, s.FinishRunnerAudit(ctx, tokB, l1.LeaseID, store.RunnerFinish{Report: []byte(`{}`)}, t0.Add(50*time.Second)), store.ErrGone)
	if _, err := s.LeaseRunnerAudit(ctx, tokA, "two", "eu", t0.Add(90*time.Second), t0.Add(3*time.Minute)); err == nil {
		t.Fatal("a heartbeat did not extend the lease: another runner leased it")
	}
	// The runner is lost: past its lease, another runner leases the audit under a new lease.
	l2, err := s.LeaseRunnerAudit(ctx, tokA, "two", "eu", t0.Add(2*time.Minute+time.Second), t0.Add(4*time.Minute))
	must(t, err)
	if l2.ID != au.ID || l2.LeaseID == l1.LeaseID || l2.Runner != store.RunnerKey(tokA.ID, "two") {
		t.Fatalf("second lease: %+v", l2)
	}
	// The lost runner's result and heartbeat are refused: its lease is gone.
	wantErr(t, s.FinishRunnerAudit(ctx, tokA, l1.LeaseID, store.RunnerFinish{Report: []byte(`{"late":true}`)}, t0.Add(2*time.Minute+2*time.Second)), store.ErrGone)
	wantErr(t, s.ExtendRunnerLease(ctx, tokA, l1.LeaseID, t0.Add(2*time.Minute+2*time.Second), t0.Add(5*time.Minute)), store.ErrGone)
	// A result after the lease's end is refused even with no other runner around.
	wantErr(t, s.FinishRunnerAudit(ctx, tokA, l2.LeaseID, store.RunnerFinish{Report: []byte(`{}`)}, t0.Add(4*time.Minute+time.Second)), store.ErrGone)
	l3, err := s.LeaseRunnerAudit(ctx, tokA, "two", "eu", t0.Add(5*time.Minute), t0.Add(6*time.Minute))
	must(t, err)
	must(t, s.FinishRunnerAudit(ctx, tokA, l3.LeaseID, store.RunnerFinish{Report: []byte(`{"ok":1}`), Benchmark: 1234.5}, t0.Add(5*time.Minute+time.Second)))
	got, err := s.RunnerAudit(ctx, au.ID)
	must(t, err)
	if got.State != store.RunnerDone || string(got.Report) != `{"ok":1}` || got.Benchmark != 1234.5 || got.Location != "eu" {
		t.Fatalf("finished: %+v", got)
	}
	// Finished: a second result is refused, and nobody leases it again.
	wantErr(t, s.FinishRunnerAudit(ctx, tokA, l3.LeaseID, store.RunnerFinish{Report: []byte(`{}`)}, t0.Add(5*time.Minute+2*time.Second)), store.ErrGone)
	_, err = s.LeaseRunnerAudit(ctx, tokA, "one", "eu", t0.Add(7*time.Minute), t0.Add(8*time.Minute))
	wantErr(t, err, store.ErrNotFound)

	// A failure is recorded as the page's error; revoking a token gives its leases back at once
	// and refuses its results.
	au2 := runnerAudit(t, s, site, scan, "/b", t0.Add(time.Second))
	l4, err := s.LeaseRunnerAudit(ctx, tokA, "one", "", t0.Add(8*time.Minute), t0.Add(9*time.Minute))
	must(t, err)
	tokA2, _ := newRunnerToken(t, s, a.ID, "a2")
	must(t, s.RevokeRunnerToken(ctx, a.ID, tokA.ID, t0.Add(8*time.Minute)))
	wantErr(t, s.FinishRunnerAudit(ctx, tokA, l4.LeaseID, store.RunnerFinish{Report: []byte(`{}`)}, t0.Add(8*time.Minute+time.Second)), store.ErrGone)
	_, err = s.LeaseRunnerAudit(ctx, tokA, "one", "", t0.Add(8*time.Minute), t0.Add(9*time.Minute))
	wantErr(t, err, store.ErrNotFound)
	l5, err := s.LeaseRunnerAudit(ctx, tokA2, "x", "", t0.Add(8*time.Minute), t0.Add(9*time.Minute))
	must(t, err)
	if l5.ID != au2.ID {
		t.Fatalf("the revoked token's audit was not given back: %+v", l5)
	}
	must(t, s.FinishRunnerAudit(ctx, tokA2, l5.LeaseID, store.RunnerFinish{Error: "Chrome crashed"}, t0.Add(8*time.Minute+time.Second)))
	got, err = s.RunnerAudit(ctx, au2.ID)
	must(t, err)
	if got.State != store.RunnerFailed || got.Error != "Chrome crashed" || got.Report != nil {
		t.Fatalf("failed: %+v", got)
	}
	must(t, s.DeleteRunnerAudit(ctx, au2.ID))
	_, err = s.RunnerAudit(ctx, au2.ID)
	wantErr(t, err, store.ErrNotFound)

	// A new attempt of the scan forgets what an earlier one left.
	left := runnerAudit(t, s, site, scan, "/left", t0.Add(3*time.Second))
	must(t, s.ForgetRunnerAudits(ctx, scan.ID))
	_, err = s.RunnerAudit(ctx, left.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.RunnerAudit(ctx, au.ID)
	wantErr(t, err, store.ErrNotFound)

	// An operator's runner serves every workspace: B's site's audit too.
	siteB := newSite(t, s, b, "b site")
	scanB := enqueue(t, s, siteB, t0)
	auB := runnerAudit(t, s, siteB, scanB, "/", t0.Add(2*time.Second))
	op, _ := newRunnerToken(t, s, "", "fleet")
	lop, err := s.LeaseRunnerAudit(ctx, op, "f1", "", t0.Add(10*time.Minute), t0.Add(11*time.Minute))
	must(t, err)
	if lop.ID != auB.ID {
		t.Fatalf("operator's lease: %+v", lop)
	}
}

func testRunnerChoice(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "a site")
	scan := enqueue(t, s, site, t0)
	tok, _ := newRunnerToken(t, s, a.ID, "a")
	locs, err := s.SiteLocations(ctx, site.ID)
	must(t, err)
	if locs != nil {
		t.Fatalf("a new site names locations: %v", locs)
	}
	must(t, s.SetSiteLocations(ctx, site.ID, []string{"staging-lan"}))
	locs, err = s.SiteLocations(ctx, site.ID)
	must(t, err)
	if len(locs) != 1 || locs[0] != "staging-lan" {
		t.Fatalf("locations: %v", locs)
	}
	_, err = s.SiteLocations(ctx, store.NewID())
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.SetSiteLocations(ctx, store.NewID(), []string{"x"}), store.ErrNotFound)

	au := store.RunnerAudit{ID: store.NewID(), WorkspaceID: a.ID, SiteID: site.ID, ScanID: scan.ID, PageURL: "https://x.test/",
		Strategy: store.StrategyMobile, Locations: locs, CreatedAt: t0}
	must(t, s.EnqueueRunnerAudit(ctx, au))
	_, err = s.LeaseRunnerAudit(ctx, tok, "cloud", "eu-west", t0, t0.Add(time.Minute))
	wantErr(t, err, store.ErrNotFound)
	l, err := s.LeaseRunnerAudit(ctx, tok, "lan", "staging-lan", t0, t0.Add(time.Minute))
	must(t, err)
	if l.ID != au.ID {
		t.Fatalf("lease: %+v", l)
	}
	must(t, s.SetSiteLocations(ctx, site.ID, nil))
	if locs, _ := s.SiteLocations(ctx, site.ID); locs != nil {
		t.Fatalf("locations after clearing: %v", locs)
	}

	// A re-audit avoiding runner "seen" goes to another runner; "seen" gets it only after
	// AvoidGrace.
	re := store.RunnerAudit{ID: store.NewID(), WorkspaceID: a.ID, SiteID: site.ID, ScanID: scan.ID, PageURL: "https://x.test/",
		Strategy: store.StrategyMobile, Avoid: store.RunnerKey(tok.ID, "seen"), CreatedAt: t0.Add(time.Minute)}
	must(t, s.EnqueueRunnerAudit(ctx, re))
	_, err = s.LeaseRunnerAudit(ctx, tok, "seen", "", t0.Add(time.Minute+time.Second), t0.Add(2*time.Minute))
	wantErr(t, err, store.ErrNotFound)
	l, err = s.LeaseRunnerAudit(ctx, tok, "seen", "", t0.Add(time.Minute+store.AvoidGrace+time.Second), t0.Add(3*time.Minute))
	must(t, err)
	if l.ID != re.ID {
		t.Fatalf("after the grace: %+v", l)
	}
}
