package storetest_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestStore runs the contract suite against every backend: the memory store always, Postgres
// when DATABASE_URL is set. Both must give the same answers.
func TestStore(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { testStore(t, b.Open) })
	}
}

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func testStore(t *testing.T, open func(testing.TB) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"users are unique by e-mail whatever its case", testUsers},
		{"page metrics are the page results' scores and vitals, owner-scoped", testPageMetrics},
		{"page metrics of several scans come in one call, owner-scoped", testPageMetricsOf},
		{"page metrics carry every score and vital in its own field", testPageMetricsEveryValue},
		{"sessions are found by hash until they expire, and record when they were last seen", testSessions},
		{"api keys are found by hash, record their use and stop working when revoked", testAPIKeys},
		{"an api key keeps the scope it was made with", testAPIKeyScope},
		{"a metadata-document client is saved again with its document's latest name and redirect URIs", testSaveMetadataClient},
		{"every read of a site and its data is scoped to its owner", testOwnerScoping},
		{"platform site ids are unique but may be empty on many sites", testPlatformIDs},
		{"20 concurrent creations within a cap of 3 sites create exactly 3", testSiteCap},
		{"20 concurrent reports within a cap of 3 active ones create exactly 3; revoked and expired ones do not count", testReportCap},
		{"budgets and alert rules belong to a site", testBudgetsAndRules},
		{"an alert channel is its workspace's (owners and editors write, members read), validated, capped, and keeps one delivery row per event", testChannels},
		{"the budget state alerts compare with swaps in one step: ten concurrent breaks see one transition; the same scan again gets its first answer", testBudgetState},
		{"a channel is marked failing from its first failure until it recovers, turned by one call", testChannelFailing},
		{"a publish keeps who published what and its scan, for its site's owner only", testPublishes},
		{"a platform connect state is taken once, by its user, before it expires", testPlatformStates},
		{"a user keeps at most MaxPlatformStates live connect states, and no expired one", testPlatformStateCap},
		{"a platform connection is saved sealed, disabled on refusal, forgotten on disconnect", testPlatformConnection},
		{"importing a platform site is idempotent and a verified link is one account's", testImportPlatformSite},
		{"a platform pages refresh writes only onto its owner's site still verified for it", testSetSitePages},
		{"a budget check's inputs load together, for the owner only", testBudgetInputs},
		{"a budget check's key and inputs load together, for the key's user only", testBudgetInputsByKey},
		{"a budget check sees each change to its site at once, however often it ran before", testBudgetInputsFollowChanges},
		{"concurrent uses of one key all authenticate and record the use", testConcurrentKeyUse},
		{"latest completed scan ignores queued, running and failed scans", testLatestCompleted},
		{"site listings carry each site's newest scan of any status, for the owner only", testLastScans},
		{"a second scan for a site with one in flight is SCAN_ALREADY_ACTIVE", testInFlight},
		{"a publish during a scan is covered by a queued scan, or queues the site's one follow-up, which later publishes join", testFollowUps},
		{"50 concurrent enqueues for one site create exactly one scan", testConcurrentEnqueue},
		{"2 concurrent claimers over 500 jobs claim each exactly once", testConcurrentClaims},
		{"workspaces take turns at the claim, and one at a worker's cap of its running jobs waits there while others are claimed", testFairClaims},
		{"accounts take turns at the claim before workspaces, and an account at a worker's cap across its workspaces waits there while others are claimed", testFairClaimsPerAccount},
		{"a job is claimed only from its queue and not before its run time", testRunAt},
		{"a stale worker's writes are ignored after a rescue", testStaleWorker},
		{"a rescue on the last attempt fails the scan", testRescueGivesUp},
		{"a rescued job resumes ahead of jobs queued after it", testRescueKeepsPlace},
		{"retry puts the job back with its reason, which the scan's owner can read", testRetry},
		{"a snooze puts the job back without spending an attempt, under a new lease", testSnooze},
		{"page results are upserted and counted once", testPageUpsert},
		{"audits in flight are written under the lease and read with the scan", testAuditsInFlight},
		{"a page result keeps how many runs stand behind it, one when not said", testPageRuns},
		{"overdue scans are the unfinished ones started before the deadline", testOverdueScans},
		{"a site keeps its scan schedule and next scheduled scan", testSiteSchedule},
		{"editing a site moves its next scheduled scan only when its schedule changes", testUpdateSiteKeepsNextScan},
		{"due scheduled sites get one scan each and move a period ahead", testEnqueueDueScans},
		{"8 concurrent schedulers enqueue a due site's scan exactly once", testConcurrentSchedulers},
		{"expiring a scan fails it, fences its worker and frees its site", testExpireScan},
		{"completing a scan sets its scores and the site's health", testCompleteScan},
		{"a code is redeemed once under concurrency, storing only the winner's tokens", testRedeemCode},
		{"refresh rotation is single-use and revocation follows the family", testTokens},
		{"consents list connected apps and revoking one kills its tokens", testConsents},
		{"pending authorization requests are taken once by their user", testAuthRequests},
		{"a user keeps at most MaxPendingAuthRequests live pending requests, and no expired one", testPendingCap},
		{"never-used clients older than the cut-off are deleted, used ones kept", testUnusedClients},
		{"reports are created on own scans and found by hash", testReports},
		{"webhook deliveries are seen once per window and forgotten after it", testDeliveries},
		{"a workspace's daily audits are taken up to the limit, by 40 concurrent takers too, afresh each UTC day", testAuditBudget},
		{"an account's daily audits across the workspaces it owns or created that day stay under its budget, which outlives a deleted workspace", testAccountAuditBudget},
		{"past the mark the key's day is shared among the accounts that audited, and a reserve keeps newcomers' first scans", testKeyDayShares},
		{"an audit that spends no PSI key counts against its workspace's budget only, not its owners' nor the key's day", testKeyFreeAudits},
		{"deleting a site deletes its scans and reports", testDeleteSite},
		{"a job of any kind carries its args and is claimed only for its kind", testJobKinds},
		{"a store just opened is ready", testReady},
		{"job figures count the live jobs by kind and state and age the oldest runnable one", testJobFigures},
		{"completing a scan enqueues its follow-up jobs in the same transaction, a lost lease none", testCompleteScanFollowUps},
		{"finished jobs are cleaned after the cut-off, oldest first; unfinished ones never", testCleanJobs},
		{"every site write normalises the site and refuses one that breaks the rules, writing nothing", testSiteWritesValidate},
		{"a second site of one owner on the same normalised domain is refused, naming the first", testSameDomain},
		{"a site's lastPublished never moves backwards", testLastPublishedForward},
		{"a scan records the pages discovery found, under its lease, never lowered", testPagesFound},
		{"a budget is a finite threshold of at least 0 for a known strategy", testBudgetsValidate},
		{"a completed scan keeps its summary, written at completion: each strategy's scores and worst pages", testScanSummary},
		{"pruning removes old page details in batches, never a running scan's, the latest two completed nor a workspace's that keeps them; summaries stay", testPruneDetails},
		{"a month goes whole (a partition on Postgres) when no workspace keeps a scan of it; a straddling month is pruned row by row", testPruneMonths},
		{"at most one prune job is queued or running, and one an hour", testEnqueuePrune},
		{"a site's page reads what the separate reads give, for the owner only", testSiteView},
		{"a site's access setting is written by owners and editors, read by members, sealed, and goes with its site", testSiteAccess},
		{"a scan started with pages of its own carries them in its job, not in the scan", testScanPagesInJob},
		{"scans are read by id in one call, any status, unknown ids skipped", testScansByID},
		{"a site's CrUX history is upserted per period, filtered, ordered, read by its workspace only, and goes with its site", testCruxHistory},
		{"a site's CrUX refresh is enqueued once a week, in its workspace", testEnqueueDueCrux},
		{"a site with field data gets one field check a UTC day, however many processes ask; one without, none", testEnqueueDueField},
		{"a CrUX refresh queries the pages of the site's latest completed scan", testCruxTarget},
		{"CrUX points past their workspace's retention are pruned in batches; a workspace keeping history forever keeps them", testPruneCrux},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			tt.fn(t, s)
		})
	}
}

var ctx = context.Background()

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
}

func newUser(t testing.TB, s store.Store, email string) store.User {
	t.Helper()
	u := store.User{ID: store.NewID(), Email: email, PasswordHash: "x", NotifyRegressions: true, CreatedAt: t0}
	must(t, s.CreateUser(ctx, u))
	return u
}

func newSite(t testing.TB, s store.Store, u store.User, name string) store.Site {
	t.Helper()
	host := strings.Map(func(r rune) rune { // a name such as "b's" or "never scanned" as a host name
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(name))
	site := store.Site{ID: store.NewID(), UserID: u.ID, Name: name, Domain: host + ".test", Pages: []string{"/"}, CreatedAt: t0}
	must(t, s.CreateSite(ctx, site))
	return site
}

func enqueue(t testing.TB, s store.Store, site store.Site, at time.Time) store.Scan {
	t.Helper()
	sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: at}
	must(t, s.EnqueueScan(ctx, sc, store.KindScan, at))
	return sc
}

func ip(v int) *int { return &v }

// completedScan runs a scan through the queue to completion with one mobile result.
func completedScan(t *testing.T, s store.Store, site store.Site, at time.Time, perf int) store.Scan {
	t.Helper()
	sc := enqueue(t, s, site, at)
	j, err := s.ClaimJob(ctx, store.KindScan, "w", at, 0)
	must(t, err)
	if j.ScanID != sc.ID {
		t.Fatalf("claimed scan %s, want %s", j.ScanID, sc.ID)
	}
	must(t, s.StartScan(ctx, j.Lease(), 1, at))
	must(t, s.SavePageResult(ctx, j.Lease(), store.PageResult{PagePath: "/", PageURL: "https://x.test/", Strategy: "mobile",
		Scores: store.PageScores{Performance: ip(perf)}}))
	must(t, s.CompleteScan(ctx, j.Lease(), store.ScanScores{Health: ip(perf), Performance: ip(perf)}, at.Add(time.Minute)))
	got, err := s.Scan(ctx, site.UserID, sc.ID)
	must(t, err)
	return got
}

func testUsers(t *testing.T, s store.Store) {
	u := newUser(t, s, "Ann@Example.com")
	wantErr(t, s.CreateUser(ctx, store.User{ID: store.NewID(), Email: "ann@example.COM", PasswordHash: "y", CreatedAt: t0}), store.ErrConflict)
	got, err := s.UserByEmail(ctx, "ANN@example.com")
	must(t, err)
	// Kept in its canonical form: ASCII letters lower-cased (store.CanonicalEmail).
	if got.ID != u.ID || got.Email != "ann@example.com" || !got.CreatedAt.Equal(t0) || !got.NotifyRegressions {
		t.Errorf("got %+v, want %+v", got, u)
	}
	must(t, s.SetNotifyRegressions(ctx, u.ID, false))
	must(t, s.SetPasswordHash(ctx, u.ID, "new"))
	got, err = s.UserByID(ctx, u.ID)
	must(t, err)
	if got.NotifyRegressions || got.PasswordHash != "new" {
		t.Errorf("update not kept: %+v", got)
	}
	_, err = s.UserByEmail(ctx, "nobody@example.com")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.UserByID(ctx, "not-a-uuid")
	wantErr(t, err, store.ErrNotFound)
}

func testSessions(t *testing.T, s store.Store) {
	u := newUser(t, s, "s@example.com")
	_, hash := store.NewSecret("")
	must(t, s.CreateSession(ctx, store.Session{TokenHash: hash, UserID: u.ID, CSRF: "c", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}))
	got, err := s.SessionByHash(ctx, hash, t0.Add(time.Minute))
	must(t, err)
	if got.UserID != u.ID || got.CSRF != "c" || !got.ExpiresAt.Equal(t0.Add(time.Hour)) || !got.SeenAt.Equal(t0) {
		t.Errorf("got %+v", got)
	}
	if gu := got.User; gu.ID != u.ID || gu.Email != u.Email || gu.PasswordHash != u.PasswordHash || gu.NotifyRegressions != u.NotifyRegressions || !gu.CreatedAt.Equal(u.CreatedAt) {
		t.Errorf("the session's user is %+v, want %+v", got.User, u)
	}
	must(t, s.TouchSession(ctx, hash, t0.Add(30*time.Minute)))
	if got, _ := s.SessionByHash(ctx, hash, t0.Add(31*time.Minute)); !got.SeenAt.Equal(t0.Add(30 * time.Minute)) {
		t.Errorf("seen at %v after a touch, want %v", got.SeenAt, t0.Add(30*time.Minute))
	}
	_, err = s.SessionByHash(ctx, hash, t0.Add(time.Hour))
	wantErr(t, err, store.ErrNotFound)
	_, err = s.SessionByHash(ctx, store.HashSecret("other"), t0)
	wantErr(t, err, store.ErrNotFound)
	must(t, s.DeleteSession(ctx, hash))
	_, err = s.SessionByHash(ctx, hash, t0)
	wantErr(t, err, store.ErrNotFound)
}

func testAPIKeyScope(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	for _, scope := range []string{store.ScopeRead, store.ScopeAll} {
		secret, hash := store.NewSecret("svc_")
		must(t, s.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: a.ID, Name: scope, KeyHash: hash, Prefix: secret[:12], Scope: scope, CreatedAt: t0}))
		got, err := s.APIKeyByHash(ctx, hash, t0)
		must(t, err)
		if got.Scope != scope {
			t.Errorf("APIKeyByHash(...).Scope = %q, want %q", got.Scope, scope)
		}
	}
	keys, err := s.APIKeys(ctx, a.ID)
	must(t, err)
	for _, k := range keys {
		if k.Scope != k.Name {
			t.Errorf("APIKeys: key %q has scope %q", k.Name, k.Scope)
		}
	}
}

func testSaveMetadataClient(t *testing.T, s store.Store) {
	const id = "https://app.example/client.json"
	c := store.OAuthClient{ID: id, Name: "App", RedirectURIs: []string{"https://app.example/cb"}, GrantTypes: []string{"authorization_code"}, AuthMethod: "none", Scope: store.ScopeAll, CreatedAt: t0}
	must(t, s.SaveMetadataClient(ctx, c))
	c.Name, c.RedirectURIs, c.CreatedAt = "App 2", []string{"https://app.example/cb2"}, t0.Add(time.Hour)
	must(t, s.SaveMetadataClient(ctx, c))
	got, err := s.Client(ctx, id)
	must(t, err)
	if got.Name != "App 2" || len(got.RedirectURIs) != 1 || got.RedirectURIs[0] != "https://app.example/cb2" || !got.CreatedAt.Equal(t0) {
		t.Errorf("client = %+v, want the second document's name and redirect URIs, first saved at %s", got, t0)
	}
	// A registered client is never overwritten through this door.
	must(t, s.CreateClient(ctx, store.OAuthClient{ID: "c_reg", Name: "Registered", RedirectURIs: []string{"https://r/cb"}, AuthMethod: "client_secret_post", SecretHash: "h", Scope: store.ScopeRead, CreatedAt: t0}))
	wantErr(t, s.SaveMetadataClient(ctx, store.OAuthClient{ID: "c_reg", Name: "Hijack", AuthMethod: "none", CreatedAt: t0}), store.ErrConflict)
	got, _ = s.Client(ctx, "c_reg")
	if got.Name != "Registered" || got.SecretHash != "h" {
		t.Errorf("registered client = %+v, want it unchanged", got)
	}
}

func testAPIKeys(t *testing.T, s store.Store) {
	a, b := newUser(t, s, "a@example.com"), newUser(t, s, "b@example.com")
	secret, hash := store.NewSecret("svc_")
	k := store.APIKey{ID: store.NewID(), UserID: a.ID, Name: "ci", KeyHash: hash, Prefix: secret[:12], CreatedAt: t0}
	must(t, s.CreateAPIKey(ctx, k))
	must(t, s.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: a.ID, Name: "later", KeyHash: store.HashSecret("x"), Prefix: "svc_x", CreatedAt: t0.Add(time.Second)}))
	keys, err := s.APIKeys(ctx, a.ID)
	must(t, err)
	if len(keys) != 2 || keys[0].Name != "later" || keys[1].LastUsedAt != nil {
		t.Fatalf("keys = %+v", keys)
	}
	got, err := s.APIKeyByHash(ctx, store.HashSecret(secret), t0.Add(time.Hour))
	must(t, err)
	if got.UserID != a.ID || got.LastUsedAt == nil || !got.LastUsedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("got %+v", got)
	}
	keys, _ = s.APIKeys(ctx, a.ID)
	if keys[1].LastUsedAt == nil {
		t.Error("last use not recorded")
	}
	// A use within a minute keeps the recorded time; a later one moves it.
	got, _ = s.APIKeyByHash(ctx, store.HashSecret(secret), t0.Add(time.Hour+30*time.Second))
	if !got.LastUsedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("last use after 30 s = %v, want %v", got.LastUsedAt, t0.Add(time.Hour))
	}
	got, _ = s.APIKeyByHash(ctx, store.HashSecret(secret), t0.Add(time.Hour+time.Minute))
	if !got.LastUsedAt.Equal(t0.Add(time.Hour + time.Minute)) {
		t.Errorf("last use after a minute = %v, want %v", got.LastUsedAt, t0.Add(time.Hour+time.Minute))
	}
	if keys, _ := s.APIKeys(ctx, b.ID); len(keys) != 0 {
		t.Errorf("b sees a's keys: %+v", keys)
	}
	wantErr(t, s.RevokeAPIKey(ctx, b.ID, k.ID, t0), store.ErrNotFound)
	must(t, s.RevokeAPIKey(ctx, a.ID, k.ID, t0))
	_, err = s.APIKeyByHash(ctx, hash, t0)
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.RevokeAPIKey(ctx, a.ID, k.ID, t0), store.ErrNotFound)
	if keys, _ := s.APIKeys(ctx, a.ID); len(keys) != 1 {
		t.Errorf("revoked key still listed: %+v", keys)
	}
}

func testOwnerScoping(t *testing.T, s store.Store) {
	a, b := newUser(t, s, "a@example.com"), newUser(t, s, "b@example.com")
	site := newSite(t, s, a, "alpha")
	sc := completedScan(t, s, site, t0, 80)
	must(t, s.SetBudgets(ctx, a.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 90}}))
	_, rhash := store.NewSecret("")
	rep := store.Report{ID: store.NewID(), TokenHash: rhash, ScanID: sc.ID, UserID: a.ID, Title: "r", CreatedAt: t0}
	must(t, s.CreateReport(ctx, rep))

	reads := map[string]func(userID string) error{
		"Site":       func(u string) error { _, err := s.Site(ctx, u, site.ID); return err },
		"Budgets":    func(u string) error { _, err := s.Budgets(ctx, u, site.ID); return err },
		"SetBudgets": func(u string) error { return s.SetBudgets(ctx, u, site.ID, nil) },
		"AlertRules": func(u string) error { _, err := s.AlertRules(ctx, u, site.ID); return err },
		"AddAlertRule": func(u string) error {
			return s.AddAlertRule(ctx, u, store.AlertRule{ID: store.NewID(), SiteID: site.ID, Metric: "lcp", Operator: "max", Threshold: 1})
		},
		"Scan":                func(u string) error { _, err := s.Scan(ctx, u, sc.ID); return err },
		"ScansOf":             func(u string) error { _, err := s.ScansOf(ctx, u, site.ID, 10); return err },
		"CompletedScans":      func(u string) error { _, err := s.CompletedScans(ctx, u, site.ID, 10); return err },
		"LatestCompletedScan": func(u string) error { _, err := s.LatestCompletedScan(ctx, u, site.ID); return err },
		"PageResults":         func(u string) error { _, err := s.PageResults(ctx, u, sc.ID); return err },
		"EachPageResult": func(u string) error {
			return s.EachPageResult(ctx, u, sc.ID, func(store.PageResult) error { return nil })
		},
		"ExportScan": func(u string) error {
			return s.ExportScan(ctx, u, site.ID, "", true, func(store.Site, *store.Scan) error { return nil }, func(store.PageResult, *store.PageResult) error { return nil })
		},
		"PageResult": func(u string) error { _, err := s.PageResult(ctx, u, sc.ID, "/", "mobile"); return err },
		"PageErrors": func(u string) error { _, err := s.PageErrors(ctx, u, sc.ID); return err },
		"UpdateSite": func(u string) error {
			return s.UpdateSite(ctx, store.Site{ID: site.ID, UserID: u, Name: "x", Domain: "x"})
		},
		"RevokeReport": func(u string) error { return s.RevokeReport(ctx, u, rep.ID, t0) },
		"CreateReport": func(u string) error {
			return s.CreateReport(ctx, store.Report{ID: store.NewID(), TokenHash: store.HashSecret(u), ScanID: sc.ID, UserID: u, Title: "t", CreatedAt: t0})
		},
		"DeleteSite": func(u string) error { return s.DeleteSite(ctx, u, site.ID) },
	}
	for name, read := range reads {
		if err := read(b.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s as another user: got %v, want ErrNotFound", name, err)
		}
	}
	if sites, _ := s.SitesOf(ctx, b.ID); len(sites) != 0 {
		t.Errorf("b lists a's sites: %+v", sites)
	}
	if reports, _ := s.ReportsOf(ctx, b.ID); len(reports) != 0 {
		t.Errorf("b lists a's reports: %+v", reports)
	}
	// a's rows are unchanged by b's attempts.
	got, err := s.Site(ctx, a.ID, site.ID)
	must(t, err)
	if got.Name != "alpha" {
		t.Errorf("b renamed a's site to %q", got.Name)
	}
	budgets, _ := s.Budgets(ctx, a.ID, site.ID)
	if budgets["performance"].Threshold != 90 {
		t.Errorf("b changed a's budgets: %v", budgets)
	}
	for name, read := range reads {
		if name == "DeleteSite" {
			continue
		}
		if err := read(a.ID); err != nil {
			t.Errorf("%s as the owner: %v", name, err)
		}
	}
	// Ids that are not uuids are simply not found.
	if _, err := s.Site(ctx, a.ID, "'; drop table sites; --"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bad id: %v", err)
	}
}

func testPlatformIDs(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	one := store.Site{ID: store.NewID(), UserID: a.ID, Name: "one", Domain: "one.test", PlatformSiteID: "p1", CreatedAt: t0}
	must(t, s.CreateSite(ctx, one))
	dup := store.Site{ID: store.NewID(), UserID: a.ID, Name: "dup", Domain: "dup.test", PlatformSiteID: "p1", CreatedAt: t0}
	wantErr(t, s.CreateSite(ctx, dup), store.ErrConflict)
	newSite(t, s, a, "blank1")
	newSite(t, s, a, "blank2")
	got, err := s.SiteByPlatformID(ctx, "p1")
	must(t, err)
	if got.ID != one.ID || got.Pages == nil {
		t.Errorf("got %+v", got)
	}
	_, err = s.SiteByPlatformID(ctx, "")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.SiteByPlatformID(ctx, "p2")
	wantErr(t, err, store.ErrNotFound)
	two := newSite(t, s, a, "two")
	// The edit form cannot set or move a platform link: UpdateSite leaves it alone.
	two.PlatformSiteID = "p1"
	must(t, s.UpdateSite(ctx, two))
	if got, _ := s.Site(ctx, a.ID, two.ID); got.PlatformSiteID != "" {
		t.Errorf("UpdateSite set platform id %q", got.PlatformSiteID)
	}
	one.Name = "one renamed"
	one.PlatformSiteID = ""
	must(t, s.UpdateSite(ctx, one))
	if got, _ := s.Site(ctx, a.ID, one.ID); got.PlatformSiteID != "p1" {
		t.Errorf("UpdateSite cleared platform id: %q", got.PlatformSiteID)
	}
	must(t, s.MarkPublished(ctx, one.ID, t0.Add(time.Hour)))
	got, _ = s.Site(ctx, a.ID, one.ID)
	if got.LastPublished == nil || !got.LastPublished.Equal(t0.Add(time.Hour)) {
		t.Errorf("lastPublished = %v", got.LastPublished)
	}
	sites, _ := s.SitesOf(ctx, a.ID)
	if len(sites) != 4 || sites[0].Name != "blank1" {
		t.Errorf("sites = %+v", sites)
	}
}

func testBudgetsAndRules(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	b, err := s.Budgets(ctx, a.ID, site.ID)
	must(t, err)
	if len(b) != 0 {
		t.Errorf("new site has budgets %v", b)
	}
	must(t, s.SetBudgets(ctx, a.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 90}, "lcp": {Threshold: 2500}}))
	must(t, s.SetBudgets(ctx, a.ID, site.ID, map[string]store.Budget{"cls": {Threshold: 0.1}, "lcp": {Threshold: 3000, Strategy: store.StrategyMobile}}))
	b, _ = s.Budgets(ctx, a.ID, site.ID)
	want := map[string]store.Budget{"cls": {Threshold: 0.1, Strategy: store.StrategyBoth}, "lcp": {Threshold: 3000, Strategy: store.StrategyMobile}}
	if !reflect.DeepEqual(b, want) {
		t.Errorf("budgets = %v, want %v (replaced, a missing strategy stored as both)", b, want)
	}
	r1 := store.AlertRule{ID: store.NewID(), SiteID: site.ID, Metric: "seo", Operator: store.OpMin, Threshold: 80, CreatedAt: t0}
	r2 := store.AlertRule{ID: store.NewID(), SiteID: site.ID, Metric: "tbt", Operator: store.OpMax, Threshold: 300, CreatedAt: t0.Add(time.Second)}
	must(t, s.AddAlertRule(ctx, a.ID, r1))
	must(t, s.AddAlertRule(ctx, a.ID, r2))
	rules, _ := s.AlertRules(ctx, a.ID, site.ID)
	if len(rules) != 2 || rules[0].ID != r1.ID || rules[1].Threshold != 300 {
		t.Errorf("rules = %+v", rules)
	}

	// A change keeps the rule's id, creation time and place; only its owner can make it.
	changed := store.AlertRule{ID: r1.ID, SiteID: site.ID, Metric: "accessibility", Operator: store.OpMin, Threshold: 95, CreatedAt: t0.Add(time.Hour)}
	must(t, s.UpdateAlertRule(ctx, a.ID, changed))
	rules, _ = s.AlertRules(ctx, a.ID, site.ID)
	if want := (store.AlertRule{ID: r1.ID, SiteID: site.ID, Metric: "accessibility", Operator: store.OpMin, Threshold: 95, CreatedAt: t0}); len(rules) != 2 || rules[0] != want {
		t.Errorf("rules after a change = %+v, want %+v first", rules, want)
	}
	other := newUser(t, s, "b@example.com")
	otherSite := newSite(t, s, other, "other")
	wantErr(t, s.UpdateAlertRule(ctx, other.ID, changed), store.ErrNotFound)
	wantErr(t, s.UpdateAlertRule(ctx, other.ID, store.AlertRule{ID: r1.ID, SiteID: otherSite.ID, Metric: "seo", Operator: store.OpMin}), store.ErrNotFound)
	wantErr(t, s.UpdateAlertRule(ctx, a.ID, store.AlertRule{ID: store.NewID(), SiteID: site.ID, Metric: "seo", Operator: store.OpMin}), store.ErrNotFound)
	wantErr(t, s.UpdateAlertRule(ctx, a.ID, store.AlertRule{ID: "x", SiteID: site.ID}), store.ErrNotFound)

	must(t, s.DeleteAlertRule(ctx, a.ID, site.ID, r1.ID))
	wantErr(t, s.DeleteAlertRule(ctx, a.ID, site.ID, r1.ID), store.ErrNotFound)
	rules, _ = s.AlertRules(ctx, a.ID, site.ID)
	if len(rules) != 1 {
		t.Errorf("rules after delete = %+v", rules)
	}
}

func testLatestCompleted(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	_, err := s.LatestCompletedScan(ctx, a.ID, site.ID)
	wantErr(t, err, store.ErrNotFound)
	first := completedScan(t, s, site, t0, 70)
	second := completedScan(t, s, site, t0.Add(time.Hour), 60)

	// A failed scan, then one running and a queued one can't coexist: run one, leave it running.
	failed := enqueue(t, s, site, t0.Add(2*time.Hour))
	j, err := s.ClaimJob(ctx, store.KindScan, "w", t0.Add(2*time.Hour), 0)
	must(t, err)
	must(t, s.FailScan(ctx, j.Lease(), "PSI said no", t0.Add(2*time.Hour)))
	running := enqueue(t, s, site, t0.Add(3*time.Hour))
	j, err = s.ClaimJob(ctx, store.KindScan, "w", t0.Add(3*time.Hour), 0)
	must(t, err)
	must(t, s.StartScan(ctx, j.Lease(), 4, t0.Add(3*time.Hour)))

	latest, err := s.LatestCompletedScan(ctx, a.ID, site.ID)
	must(t, err)
	if latest.ID != second.ID || *latest.Scores.Performance != 60 {
		t.Errorf("latest = %+v, want %s", latest, second.ID)
	}
	done, _ := s.CompletedScans(ctx, a.ID, site.ID, 10)
	if len(done) != 2 || done[0].ID != second.ID || done[1].ID != first.ID {
		t.Errorf("completed = %v", ids(done))
	}
	all, _ := s.ScansOf(ctx, a.ID, site.ID, 10)
	if len(all) != 4 || all[0].ID != running.ID || all[1].ID != failed.ID {
		t.Errorf("all = %v", ids(all))
	}
	if all[0].Status != store.StatusRunning || all[0].PagesTotal != 4 || all[0].StartedAt == nil {
		t.Errorf("running scan = %+v", all[0])
	}
	if all[1].Status != store.StatusFailed || all[1].Error != "PSI said no" {
		t.Errorf("failed scan = %+v", all[1])
	}
	if two, _ := s.ScansOf(ctx, a.ID, site.ID, 2); len(two) != 2 {
		t.Errorf("limit not applied: %d", len(two))
	}
}

func ids(scans []store.Scan) []string {
	var out []string
	for _, s := range scans {
		out = append(out, s.ID[:8]+":"+string(s.Status))
	}
	return out
}

func testInFlight(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	first := enqueue(t, s, site, t0)
	err := s.EnqueueScan(ctx, store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: "both", Trigger: "webhook", CreatedAt: t0}, store.KindScan, t0)
	wantErr(t, err, store.ErrScanActive)
	if err.Error() == "" || !errors.Is(err, store.ErrScanActive) {
		t.Fatal(err)
	}
	j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	must(t, err)
	must(t, s.StartScan(ctx, j.Lease(), 1, t0))
	wantErr(t, s.EnqueueScan(ctx, store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: "both", Trigger: "manual", CreatedAt: t0}, store.KindScan, t0), store.ErrScanActive)
	must(t, s.CompleteScan(ctx, j.Lease(), store.ScanScores{}, t0))
	enqueue(t, s, site, t0.Add(time.Minute)) // the site is free again
	all, _ := s.ScansOf(ctx, a.ID, site.ID, 0)
	if len(all) != 2 || all[1].ID != first.ID {
		t.Errorf("scans = %v", ids(all))
	}
	wantErr(t, s.EnqueueScan(ctx, store.Scan{ID: store.NewID(), SiteID: store.NewID(), Strategy: "both", Trigger: "manual", CreatedAt: t0}, store.KindScan, t0), store.ErrNotFound)
}

func testConcurrentEnqueue(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	var ok, active atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.EnqueueScan(ctx, store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: "both", Trigger: "webhook", CreatedAt: t0}, store.KindScan, t0)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, store.ErrScanActive):
				active.Add(1)
			default:
				t.Errorf("enqueue: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || active.Load() != 49 {
		t.Errorf("created %d, refused %d; want 1 and 49", ok.Load(), active.Load())
	}
	all, _ := s.ScansOf(ctx, a.ID, site.ID, 0)
	if len(all) != 1 {
		t.Errorf("%d scans exist, want 1", len(all))
	}
}

func testConcurrentClaims(t *testing.T, s store.Store) {
	const n = 500
	a := newUser(t, s, "a@example.com")
	want := map[string]bool{}
	for i := 0; i < n; i++ {
		site := newSite(t, s, a, fmt.Sprintf("site%03d", i))
		want[enqueue(t, s, site, t0).ID] = true
	}
	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				j, err := s.ClaimJob(ctx, store.KindScan, fmt.Sprint("worker", w), t0, 0)
				if errors.Is(err, store.ErrNotFound) {
					return
				}
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if j.Attempt != 1 || j.State != store.JobRunning {
					t.Errorf("claimed %+v", j)
				}
				mu.Lock()
				claimed[j.ScanID]++
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if len(claimed) != n {
		t.Errorf("claimed %d distinct jobs, want %d", len(claimed), n)
	}
	for id, c := range claimed {
		if c != 1 || !want[id] {
			t.Errorf("scan %s claimed %d times", id, c)
		}
	}
}

func testRunAt(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: "both", Trigger: "webhook", CreatedAt: t0}
	must(t, s.EnqueueScan(ctx, sc, store.KindScan, t0.Add(3*time.Second)))
	_, err := s.ClaimJob(ctx, store.KindScan, "w", t0.Add(2*time.Second), 0)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.ClaimJob(ctx, "other", "w", t0.Add(time.Hour), 0)
	wantErr(t, err, store.ErrNotFound)
	j, err := s.ClaimJob(ctx, store.KindScan, "w", t0.Add(3*time.Second), 0)
	must(t, err)
	if j.ScanID != sc.ID || j.LockedBy != "w" || j.MaxAttempts != store.MaxAttempts {
		t.Errorf("job = %+v", j)
	}

	// A job of another kind is never claimed for the scan kind.
	other := newSite(t, s, a, "other")
	demo := store.Scan{ID: store.NewID(), SiteID: other.ID, Strategy: "both", Trigger: store.TriggerDemo, CreatedAt: t0}
	must(t, s.EnqueueScan(ctx, demo, store.KindDemo, t0))
	_, err = s.ClaimJob(ctx, store.KindScan, "w", t0.Add(time.Hour), 0)
	wantErr(t, err, store.ErrNotFound)
	j, err = s.ClaimJob(ctx, store.KindDemo, "w", t0, 0)
	must(t, err)
	if j.ScanID != demo.ID || j.Kind != store.KindDemo {
		t.Errorf("demo job = %+v", j)
	}
}

func testStaleWorker(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	sc := enqueue(t, s, site, t0)
	old, err := s.ClaimJob(ctx, store.KindScan, "zombie", t0, 0)
	must(t, err)
	must(t, s.StartScan(ctx, old.Lease(), 2, t0))
	must(t, s.SavePageResult(ctx, old.Lease(), store.PageResult{PagePath: "/", Strategy: "mobile", PageURL: "u"}))
	must(t, s.Heartbeat(ctx, old.Lease(), t0.Add(time.Minute)))

	n, err := s.RescueJobs(ctx, t0.Add(time.Minute), t0.Add(3*time.Minute)) // heartbeat not older than the cutoff
	must(t, err)
	if n != 0 {
		t.Fatalf("rescued %d fresh jobs", n)
	}
	n, err = s.RescueJobs(ctx, t0.Add(2*time.Minute), t0.Add(3*time.Minute))
	must(t, err)
	if n != 1 {
		t.Fatalf("rescued %d, want 1", n)
	}
	j, _ := s.Job(ctx, old.ID)
	if j.State != store.JobAvailable || j.LastError != store.RescueReason {
		t.Errorf("rescued job = %+v", j)
	}
	fresh, err := s.ClaimJob(ctx, store.KindScan, "rescuer", t0.Add(3*time.Minute), 0)
	must(t, err)
	if fresh.ID != old.ID || fresh.Attempt != 2 {
		t.Fatalf("reclaimed %+v", fresh)
	}
	// The zombie wakes up: nothing it writes lands.
	wantErr(t, s.Heartbeat(ctx, old.Lease(), t0.Add(4*time.Minute)), store.ErrLeaseLost)
	wantErr(t, s.SavePageResult(ctx, old.Lease(), store.PageResult{PagePath: "/x", Strategy: "mobile", PageURL: "u"}), store.ErrLeaseLost)
	wantErr(t, s.SavePageError(ctx, old.Lease(), store.PageError{PagePath: "/y", Strategy: "mobile", Error: "e"}), store.ErrLeaseLost)
	wantErr(t, s.CompleteScan(ctx, old.Lease(), store.ScanScores{Health: ip(1)}, t0.Add(4*time.Minute)), store.ErrLeaseLost)
	wantErr(t, s.FailScan(ctx, old.Lease(), "zombie", t0), store.ErrLeaseLost)
	wantErr(t, s.RetryJob(ctx, old.Lease(), t0, "zombie"), store.ErrLeaseLost)
	wantErr(t, s.StartScan(ctx, old.Lease(), 9, t0), store.ErrLeaseLost)

	done, _ := s.DonePages(ctx, sc.ID)
	if len(done) != 1 || done[0] != (store.PageKey{PagePath: "/", Strategy: "mobile"}) {
		t.Errorf("done pages = %+v, want the one saved before the rescue", done)
	}
	must(t, s.SavePageResult(ctx, fresh.Lease(), store.PageResult{PagePath: "/", Strategy: "desktop", PageURL: "u"}))
	must(t, s.CompleteScan(ctx, fresh.Lease(), store.ScanScores{Health: ip(90)}, t0.Add(5*time.Minute)))
	got, _ := s.Scan(ctx, a.ID, sc.ID)
	if got.Status != store.StatusComplete || *got.Scores.Health != 90 || got.PagesDone != 2 || got.PagesTotal != 2 {
		t.Errorf("scan = %+v", got)
	}
	j, _ = s.Job(ctx, old.ID)
	if j.State != store.JobCompleted {
		t.Errorf("job state %s", j.State)
	}
}

func testRescueGivesUp(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	sc := enqueue(t, s, site, t0)
	now := t0
	for i := 1; i <= store.MaxAttempts; i++ {
		j, err := s.ClaimJob(ctx, store.KindScan, "w", now, 0)
		must(t, err)
		if j.Attempt != i {
			t.Fatalf("attempt %d, want %d", j.Attempt, i)
		}
		now = now.Add(time.Hour)
		n, err := s.RescueJobs(ctx, now, now)
		must(t, err)
		if n != 1 {
			t.Fatalf("rescued %d", n)
		}
	}
	_, err := s.ClaimJob(ctx, store.KindScan, "w", now, 0)
	wantErr(t, err, store.ErrNotFound)
	got, _ := s.Scan(ctx, a.ID, sc.ID)
	if got.Status != store.StatusFailed || got.Error != store.RescueGiveUp {
		t.Errorf("scan = %+v", got)
	}
	enqueue(t, s, site, now) // a failed scan is not in flight
}

func testRetry(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	sc := enqueue(t, s, site, t0)
	wait := func(userID string, want store.ScanWait) {
		t.Helper()
		got, err := s.ScanWait(ctx, userID, sc.ID)
		must(t, err)
		if got.Reason != want.Reason || !got.RunAt.Equal(want.RunAt) {
			t.Errorf("scan wait = %+v, want %+v", got, want)
		}
	}
	wait(a.ID, store.ScanWait{}) // queued for its first attempt
	j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	must(t, err)
	must(t, s.RetryJob(ctx, j.Lease(), t0.Add(16*time.Second), "PSI 503"))
	wait(a.ID, store.ScanWait{Reason: "PSI 503", RunAt: t0.Add(16 * time.Second)})
	wait(newUser(t, s, "b@example.com").ID, store.ScanWait{})
	_, err = s.ClaimJob(ctx, store.KindScan, "w", t0.Add(15*time.Second), 0)
	wantErr(t, err, store.ErrNotFound)
	again, err := s.ClaimJob(ctx, store.KindScan, "w", t0.Add(16*time.Second), 0)
	must(t, err)
	if again.Attempt != 2 || again.LastError != "PSI 503" {
		t.Errorf("job = %+v", again)
	}
	wait(a.ID, store.ScanWait{}) // running again
}

func testAuditsInFlight(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	sc := enqueue(t, s, newSite(t, s, a, "site"), t0)
	j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	must(t, err)
	must(t, s.StartScan(ctx, j.Lease(), 40, t0))
	must(t, s.SetAuditsInFlight(ctx, j.Lease(), 12))
	if got, _ := s.Scan(ctx, a.ID, sc.ID); got.AuditsInFlight != 12 {
		t.Errorf("audits in flight = %d, want 12", got.AuditsInFlight)
	}
	must(t, s.RetryJob(ctx, j.Lease(), t0, "try again"))
	wantErr(t, s.SetAuditsInFlight(ctx, j.Lease(), 3), store.ErrLeaseLost)
	if got, _ := s.Scan(ctx, a.ID, sc.ID); got.AuditsInFlight != 12 {
		t.Errorf("after a write under a lost lease, audits in flight = %d, want 12 still", got.AuditsInFlight)
	}
	if list, _ := s.ScansOf(ctx, a.ID, sc.SiteID, 10); len(list) != 1 || list[0].AuditsInFlight != 12 {
		t.Errorf("scans of the site = %+v, want the one with 12 in flight", list)
	}
}

func testPageUpsert(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	sc := enqueue(t, s, site, t0)
	j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	must(t, err)
	l := j.Lease()
	must(t, s.StartScan(ctx, l, 4, t0))
	lcp := 2500.5
	r := store.PageResult{PagePath: "/", PageURL: "https://x.test/", Strategy: "mobile",
		Scores: store.PageScores{Performance: ip(50)}, CoreWebVitals: store.Vitals{LCP: &lcp},
		Opportunities:     []store.Opportunity{{Title: "Reduce unused JavaScript", SavingsMs: 300}},
		Crux:              store.Crux{LCP: &lcp, HasCruxData: true},
		ThirdPartyScripts: []store.ThirdParty{{Domain: "cdn.test", TransferSize: 1000, BlockingTime: 12.5}},
		A11yIssues:        []store.A11yIssue{{ID: "color-contrast", Title: "Contrast <low> & \"odd\""}},
		Diagnostics:       map[string]any{"numRequests": 12.0}}
	must(t, s.SavePageResult(ctx, l, r))
	r.Scores.Performance = ip(55)
	must(t, s.SavePageResult(ctx, l, r))
	must(t, s.SavePageError(ctx, l, store.PageError{PagePath: "/", Strategy: "mobile", PageURL: "u", Error: "late error"}))
	must(t, s.SavePageError(ctx, l, store.PageError{PagePath: "/b", Strategy: "mobile", PageURL: "https://x.test/b", Error: "NO_FCP"}))
	must(t, s.SavePageError(ctx, l, store.PageError{PagePath: "/b", Strategy: "mobile", PageURL: "https://x.test/b", Error: "NO_FCP again"}))
	must(t, s.SavePageError(ctx, l, store.PageError{PagePath: "/c", Strategy: "desktop", PageURL: "https://x.test/c", Error: "timeout"}))
	must(t, s.SavePageResult(ctx, l, store.PageResult{PagePath: "/c", PageURL: "https://x.test/c", Strategy: "desktop"}))

	got, err := s.Scan(ctx, a.ID, sc.ID)
	must(t, err)
	if got.PagesDone != 3 {
		t.Errorf("pagesDone = %d, want 3", got.PagesDone)
	}
	results, err := s.PageResults(ctx, a.ID, sc.ID)
	must(t, err)
	if len(results) != 2 || results[0].PagePath != "/" || results[1].PagePath != "/c" {
		t.Fatalf("results = %+v", results)
	}
	first := results[0]
	if *first.Scores.Performance != 55 || *first.CoreWebVitals.LCP != lcp || first.Opportunities[0].SavingsMs != 300 ||
		first.Diagnostics["numRequests"] != 12.0 || first.ScanID != sc.ID {
		t.Errorf("result did not round-trip: %+v", first)
	}
	errs, err := s.PageErrors(ctx, a.ID, sc.ID)
	must(t, err)
	if len(errs) != 1 || errs[0].PagePath != "/b" || errs[0].Error != "NO_FCP again" || errs[0].PageURL != "https://x.test/b" {
		t.Errorf("errors = %+v", errs)
	}
	done, _ := s.DonePages(ctx, sc.ID)
	if len(done) != 3 {
		t.Errorf("done = %+v", done)
	}
	one, err := s.PageResult(ctx, a.ID, sc.ID, "/c", "desktop")
	must(t, err)
	if one.PageURL != "https://x.test/c" {
		t.Errorf("one = %+v", one)
	}
	_, err = s.PageResult(ctx, a.ID, sc.ID, "/b", "mobile")
	wantErr(t, err, store.ErrNotFound)
	// EachPageResult streams ExportFields of each result, in page order.
	var each []string
	must(t, s.EachPageResult(ctx, a.ID, sc.ID, func(r store.PageResult) error {
		each = append(each, r.PagePath+" "+string(r.Strategy))
		if r.Runs != 1 || r.Diagnostics != nil {
			t.Errorf("streamed %+v, want ExportFields (runs 1, no diagnostics)", r)
		}
		return nil
	}))
	if fmt.Sprint(each) != "[/ mobile /c desktop]" {
		t.Errorf("streamed %v", each)
	}
	// The export streams, once the scan is complete, what an export writes of each result and
	// nothing else, after its head: the site's name and the scan.
	whole, err := s.PageResults(ctx, a.ID, sc.ID)
	must(t, err)
	export := func(scanID string, full bool) (heads []string, streamed []string) {
		i := 0
		must(t, s.ExportScan(ctx, a.ID, site.ID, scanID, full, func(site store.Site, got *store.Scan) error {
			name := site.Name
			if got == nil {
				heads = append(heads, name+" no scan")
			} else {
				heads = append(heads, name+" "+got.ID+" "+string(got.Status))
			}
			return nil
		}, func(r store.PageResult, previous *store.PageResult) error {
			streamed = append(streamed, r.PagePath+" "+string(r.Strategy))
			if previous != nil {
				t.Errorf("the site's first scan: %s has a previous run %+v", r.PagePath, previous)
			}
			if want := store.ExportRow(whole[i], full); !reflect.DeepEqual(r, want) {
				t.Errorf("streamed %+v\nwant %+v", r, want)
			}
			i++
			return nil
		}))
		return heads, streamed
	}
	if heads, streamed := export(sc.ID, true); fmt.Sprint(heads) != "[site "+sc.ID+" running]" || streamed != nil {
		t.Errorf("export of a running scan: %v %v, want its head only", heads, streamed)
	}
	if heads, _ := export("", true); fmt.Sprint(heads) != "[site no scan]" {
		t.Errorf("export of the latest completed scan before one: %v", heads)
	}
	if heads, _ := export(store.NewID(), true); fmt.Sprint(heads) != "[site no scan]" {
		t.Errorf("export of another scan: %v", heads)
	}
	must(t, s.CompleteScan(ctx, l, store.ScanScores{}, t0.Add(time.Minute)))
	for _, full := range []bool{false, true} {
		for _, id := range []string{sc.ID, ""} {
			heads, streamed := export(id, full)
			if fmt.Sprint(heads) != "[site "+sc.ID+" complete]" || fmt.Sprint(streamed) != "[/ mobile /c desktop]" {
				t.Errorf("export of %q (full %v): %v %v", id, full, heads, streamed)
			}
		}
	}
	stop := errors.New("stop")
	if err := s.ExportScan(ctx, a.ID, site.ID, "", false, func(store.Site, *store.Scan) error { return nil }, func(store.PageResult, *store.PageResult) error { return stop }); err != stop {
		t.Errorf("callback error not returned: %v", err)
	}
	if err := s.ExportScan(ctx, a.ID, site.ID, "", false, func(store.Site, *store.Scan) error { return stop }, func(store.PageResult, *store.PageResult) error { return nil }); err != stop {
		t.Errorf("head error not returned: %v", err)
	}
}

func testCompleteScan(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	sc := completedScan(t, s, site, t0, 77)
	if sc.Status != store.StatusComplete || sc.CompletedAt == nil || !sc.CompletedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("scan = %+v", sc)
	}
	if sc.Scores.SEO != nil || *sc.Scores.Performance != 77 {
		t.Errorf("scores = %+v", sc.Scores)
	}
	got, _ := s.Site(ctx, a.ID, site.ID)
	if got.HealthScore == nil || *got.HealthScore != 77 {
		t.Errorf("health = %v", got.HealthScore)
	}
	job, jobSite, err := s.ScanForJob(ctx, sc.ID)
	must(t, err)
	if job.ID != sc.ID || jobSite.ID != site.ID {
		t.Errorf("ScanForJob = %s, %s", job.ID, jobSite.ID)
	}
}

func testRedeemCode(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	must(t, s.CreateClient(ctx, store.OAuthClient{ID: "c_1", Name: "Claude", RedirectURIs: []string{"https://x/cb"}, GrantTypes: []string{"authorization_code"}, AuthMethod: "none", Scope: "mcp:read", CreatedAt: t0}))
	wantErr(t, s.CreateClient(ctx, store.OAuthClient{ID: "c_1", Name: "again", CreatedAt: t0}), store.ErrConflict)
	c, err := s.Client(ctx, "c_1")
	must(t, err)
	if c.Name != "Claude" || c.RedirectURIs[0] != "https://x/cb" {
		t.Errorf("client = %+v", c)
	}
	_, err = s.Client(ctx, "c_none")
	wantErr(t, err, store.ErrNotFound)
	code := store.AuthCode{CodeHash: store.HashSecret("ac_1"), ClientID: "c_1", UserID: a.ID, RedirectURI: "https://x/cb",
		CodeChallenge: "ch", Scope: "mcp:read", FamilyID: store.NewID(), CreatedAt: t0, ExpiresAt: t0.Add(10 * time.Minute)}
	must(t, s.CreateCode(ctx, code))
	got, err := s.Code(ctx, code.CodeHash)
	must(t, err)
	if got.UsedAt != nil || got.FamilyID != code.FamilyID || !got.ExpiresAt.Equal(code.ExpiresAt) {
		t.Errorf("code = %+v", got)
	}
	// A redemption whose tokens cannot be stored leaves the code unused.
	ghost := store.OAuthToken{TokenHash: store.HashSecret("at_ghost"), Kind: store.TokenAccess, ClientID: "c_gone", UserID: a.ID,
		FamilyID: code.FamilyID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	wantErr(t, s.RedeemCode(ctx, code.CodeHash, t0, ghost), store.ErrNotFound)
	if got, _ := s.Code(ctx, code.CodeHash); got.UsedAt != nil {
		t.Fatal("a failed redemption marked the code used")
	}
	// Each redeemer brings its own tokens; only the winner's are stored.
	var wins, conflicts atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := store.OAuthToken{TokenHash: store.HashSecret(fmt.Sprintf("at_%d", i)), Kind: store.TokenAccess, ClientID: "c_1",
				UserID: a.ID, FamilyID: code.FamilyID, Scope: "mcp:read", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
			switch err := s.RedeemCode(ctx, code.CodeHash, t0, tok); {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, store.ErrConflict):
				conflicts.Add(1)
			default:
				t.Errorf("redeem: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 || conflicts.Load() != 19 {
		t.Errorf("wins %d conflicts %d", wins.Load(), conflicts.Load())
	}
	stored := 0
	for i := 0; i < 20; i++ {
		if _, err := s.Token(ctx, store.HashSecret(fmt.Sprintf("at_%d", i))); err == nil {
			stored++
		}
	}
	if stored != 1 {
		t.Errorf("%d redeemers' tokens stored, want 1", stored)
	}
	wantErr(t, s.RedeemCode(ctx, store.HashSecret("ac_none"), t0), store.ErrNotFound)
}

func testTokens(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	must(t, s.CreateClient(ctx, store.OAuthClient{ID: "c_1", Name: "c", AuthMethod: "none", CreatedAt: t0}))
	fam := store.NewID()
	tok := func(kind, secret string) store.OAuthToken {
		return store.OAuthToken{TokenHash: store.HashSecret(secret), Kind: kind, ClientID: "c_1", UserID: a.ID, FamilyID: fam,
			Scope: "mcp:read", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	}
	must(t, s.CreateTokens(ctx, tok(store.TokenAccess, "at_1"), tok(store.TokenRefresh, "rt_1")))
	got, err := s.Token(ctx, store.HashSecret("at_1"))
	must(t, err)
	if got.Kind != store.TokenAccess || got.UserID != a.ID || got.RevokedAt != nil {
		t.Errorf("token = %+v", got)
	}
	must(t, s.RotateRefresh(ctx, store.HashSecret("rt_1"), t0, tok(store.TokenAccess, "at_2"), tok(store.TokenRefresh, "rt_2")))
	wantErr(t, s.RotateRefresh(ctx, store.HashSecret("rt_1"), t0, tok(store.TokenAccess, "at_3"), tok(store.TokenRefresh, "rt_3")), store.ErrConflict)
	wantErr(t, s.RotateRefresh(ctx, store.HashSecret("at_2"), t0), store.ErrNotFound)
	wantErr(t, s.RotateRefresh(ctx, store.HashSecret("rt_none"), t0), store.ErrNotFound)
	if _, err := s.Token(ctx, store.HashSecret("at_3")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a failed rotation stored its successors: %v", err)
	}
	old, _ := s.Token(ctx, store.HashSecret("rt_1"))
	if old.UsedAt == nil {
		t.Error("rotated token not marked used")
	}
	// Revoking an access token revokes only it.
	must(t, s.RevokeToken(ctx, store.HashSecret("at_1"), t0))
	if t2, _ := s.Token(ctx, store.HashSecret("at_2")); t2.RevokedAt != nil {
		t.Error("revoking an access token revoked its family")
	}
	// Revoking a refresh token revokes its family's access tokens.
	must(t, s.RevokeToken(ctx, store.HashSecret("rt_2"), t0))
	for _, sec := range []string{"at_1", "at_2", "rt_1", "rt_2"} {
		if tk, _ := s.Token(ctx, store.HashSecret(sec)); tk.RevokedAt == nil {
			t.Errorf("%s not revoked", sec)
		}
	}
	wantErr(t, s.RotateRefresh(ctx, store.HashSecret("rt_2"), t0), store.ErrConflict)
	must(t, s.RevokeToken(ctx, store.HashSecret("unknown"), t0))

	fam2 := store.NewID()
	must(t, s.CreateTokens(ctx, store.OAuthToken{TokenHash: store.HashSecret("at_9"), Kind: store.TokenAccess, ClientID: "c_1", UserID: a.ID, FamilyID: fam2, CreatedAt: t0, ExpiresAt: t0}))
	must(t, s.RevokeFamily(ctx, fam2, t0))
	if tk, _ := s.Token(ctx, store.HashSecret("at_9")); tk.RevokedAt == nil {
		t.Error("family not revoked")
	}
	wantErr(t, s.CreateTokens(ctx, store.OAuthToken{TokenHash: store.HashSecret("at_x"), Kind: store.TokenAccess, ClientID: "c_gone", UserID: a.ID, FamilyID: fam2, CreatedAt: t0, ExpiresAt: t0}), store.ErrNotFound)
}

func testConsents(t *testing.T, s store.Store) {
	a, b := newUser(t, s, "a@example.com"), newUser(t, s, "b@example.com")
	must(t, s.CreateClient(ctx, store.OAuthClient{ID: "c_1", Name: "Cursor", AuthMethod: "none", CreatedAt: t0}))
	must(t, s.CreateClient(ctx, store.OAuthClient{ID: "c_2", Name: "Claude", AuthMethod: "none", CreatedAt: t0}))
	must(t, s.SaveConsent(ctx, store.Consent{UserID: a.ID, ClientID: "c_1", Scope: "mcp:read", CreatedAt: t0}))
	must(t, s.SaveConsent(ctx, store.Consent{UserID: a.ID, ClientID: "c_2", Scope: "mcp:read", CreatedAt: t0.Add(time.Hour)}))
	must(t, s.SaveConsent(ctx, store.Consent{UserID: a.ID, ClientID: "c_1", Scope: "mcp:read", CreatedAt: t0.Add(time.Minute)}))
	must(t, s.CreateTokens(ctx,
		store.OAuthToken{TokenHash: "h1", Kind: store.TokenAccess, ClientID: "c_1", UserID: a.ID, FamilyID: store.NewID(), CreatedAt: t0, ExpiresAt: t0},
		store.OAuthToken{TokenHash: "h2", Kind: store.TokenAccess, ClientID: "c_2", UserID: a.ID, FamilyID: store.NewID(), CreatedAt: t0, ExpiresAt: t0}))
	list, err := s.Consents(ctx, a.ID)
	must(t, err)
	if len(list) != 2 || list[0].ClientName != "Claude" || list[1].ClientName != "Cursor" || !list[1].CreatedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("consents = %+v", list)
	}
	if l, _ := s.Consents(ctx, b.ID); len(l) != 0 {
		t.Errorf("b sees %+v", l)
	}
	wantErr(t, s.RevokeConsent(ctx, b.ID, "c_1", t0), store.ErrNotFound)
	must(t, s.RevokeConsent(ctx, a.ID, "c_1", t0))
	if tk, _ := s.Token(ctx, "h1"); tk.RevokedAt == nil {
		t.Error("token of revoked app still valid")
	}
	if tk, _ := s.Token(ctx, "h2"); tk.RevokedAt != nil {
		t.Error("other app's token revoked")
	}
	if l, _ := s.Consents(ctx, a.ID); len(l) != 1 {
		t.Errorf("consents after revoke = %+v", l)
	}
}

func testAuthRequests(t *testing.T, s store.Store) {
	a, b := newUser(t, s, "a@example.com"), newUser(t, s, "b@example.com")
	must(t, s.CreateClient(ctx, store.OAuthClient{ID: "c_1", Name: "c", AuthMethod: "none", CreatedAt: t0}))
	r := store.AuthRequest{IDHash: "r1", UserID: a.ID, ClientID: "c_1", RedirectURI: "https://x/cb", State: "s", CodeChallenge: "ch",
		Scope: "mcp:read", CreatedAt: t0, ExpiresAt: t0.Add(10 * time.Minute)}
	must(t, s.CreateAuthRequest(ctx, r))
	_, err := s.TakeAuthRequest(ctx, "r1", b.ID, t0)
	wantErr(t, err, store.ErrNotFound)
	got, err := s.TakeAuthRequest(ctx, "r1", a.ID, t0)
	must(t, err)
	if got.State != "s" || got.RedirectURI != "https://x/cb" {
		t.Errorf("request = %+v", got)
	}
	_, err = s.TakeAuthRequest(ctx, "r1", a.ID, t0)
	wantErr(t, err, store.ErrNotFound)
	r.IDHash = "r2"
	must(t, s.CreateAuthRequest(ctx, r))
	_, err = s.TakeAuthRequest(ctx, "r2", a.ID, t0.Add(10*time.Minute))
	wantErr(t, err, store.ErrNotFound)
}

func testPendingCap(t *testing.T, s store.Store) {
	a, b := newUser(t, s, "a@example.com"), newUser(t, s, "b@example.com")
	must(t, s.CreateClient(ctx, store.OAuthClient{ID: "c_1", Name: "c", AuthMethod: "none", CreatedAt: t0}))
	req := func(user store.User, id string, at time.Time) store.AuthRequest {
		return store.AuthRequest{IDHash: id, UserID: user.ID, ClientID: "c_1", RedirectURI: "https://x/cb", CodeChallenge: "ch",
			Scope: "mcp:read", CreatedAt: at, ExpiresAt: at.Add(10 * time.Minute)}
	}
	must(t, s.CreateAuthRequest(ctx, req(b, "b-old", t0)))
	for i := range store.MaxPendingAuthRequests + 5 {
		must(t, s.CreateAuthRequest(ctx, req(a, fmt.Sprintf("a%d", i), t0.Add(time.Duration(i)*time.Second))))
	}
	last := store.MaxPendingAuthRequests + 4
	at := t0.Add(time.Duration(last) * time.Second)
	for i := range last + 1 {
		_, err := s.TakeAuthRequest(ctx, fmt.Sprintf("a%d", i), a.ID, at)
		if kept := i > last-store.MaxPendingAuthRequests; (err == nil) != kept {
			t.Errorf("request a%d: %v, want kept %v", i, err, kept)
		}
	}
	if _, err := s.TakeAuthRequest(ctx, "b-old", b.ID, at); err != nil {
		t.Errorf("another user's request: %v, want it untouched", err)
	}
	// An expired request is dropped by the user's next one.
	must(t, s.CreateAuthRequest(ctx, req(a, "stale", t0)))
	must(t, s.CreateAuthRequest(ctx, req(a, "fresh", t0.Add(time.Hour))))
	if _, err := s.TakeAuthRequest(ctx, "stale", a.ID, t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired request: %v, want it gone", err)
	}
}

func testUnusedClients(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	for _, id := range []string{"c_unused", "c_new", "c_pending", "c_code", "c_token", "c_consent"} {
		at := t0
		if id == "c_new" {
			at = t0.Add(2 * time.Hour)
		}
		must(t, s.CreateClient(ctx, store.OAuthClient{ID: id, Name: id, AuthMethod: "none", CreatedAt: at}))
	}
	must(t, s.CreateAuthRequest(ctx, store.AuthRequest{IDHash: "r", UserID: a.ID, ClientID: "c_pending", RedirectURI: "https://x/cb",
		CodeChallenge: "ch", Scope: "mcp:read", CreatedAt: t0.Add(3 * time.Hour), ExpiresAt: t0.Add(4 * time.Hour)}))
	must(t, s.CreateCode(ctx, store.AuthCode{CodeHash: "h", ClientID: "c_code", UserID: a.ID, RedirectURI: "https://x/cb",
		CodeChallenge: "ch", Scope: "mcp:read", FamilyID: store.NewID(), CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}))
	must(t, s.CreateTokens(ctx, store.OAuthToken{TokenHash: "t", Kind: store.TokenAccess, ClientID: "c_token", UserID: a.ID,
		FamilyID: store.NewID(), Scope: "mcp:read", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}))
	must(t, s.SaveConsent(ctx, store.Consent{UserID: a.ID, ClientID: "c_consent", Scope: "mcp:read", CreatedAt: t0}))
	n, err := s.DeleteUnusedClients(ctx, t0.Add(time.Hour))
	must(t, err)
	if n != 1 {
		t.Errorf("deleted %d clients, want 1", n)
	}
	for _, id := range []string{"c_new", "c_pending", "c_code", "c_token", "c_consent"} {
		if _, err := s.Client(ctx, id); err != nil {
			t.Errorf("client %s: %v, want kept", id, err)
		}
	}
	_, err = s.Client(ctx, "c_unused")
	wantErr(t, err, store.ErrNotFound)
}

func testSiteCap(t *testing.T, s store.Store) {
	a, b := newUser(t, s, "a@example.com"), newUser(t, s, "b@example.com")
	newSite(t, s, b, "b's")
	var created, refused atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.CreateSiteWithin(ctx, store.Site{ID: store.NewID(), UserID: a.ID, Name: "s", Domain: fmt.Sprintf("s%d.example", i), CreatedAt: t0}, 3)
			switch {
			case err == nil:
				created.Add(1)
			case errors.Is(err, store.ErrLimit):
				refused.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	sites, err := s.SitesOf(ctx, a.ID)
	must(t, err)
	if created.Load() != 3 || refused.Load() != 17 || len(sites) != 3 {
		t.Errorf("%d created, %d refused, %d stored; want 3, 17, 3", created.Load(), refused.Load(), len(sites))
	}
	must(t, s.CreateSiteWithin(ctx, store.Site{ID: store.NewID(), UserID: b.ID, Name: "s", Domain: "s.example", CreatedAt: t0}, 3))
}

func testReportCap(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	sc := completedScan(t, s, newSite(t, s, a, "a's"), t0, 90)
	report := func(at time.Time) store.Report {
		return store.Report{ID: store.NewID(), TokenHash: store.NewID(), ScanID: sc.ID, UserID: a.ID, Title: "t", CreatedAt: at}
	}
	expired, revoked := report(t0), report(t0)
	past := t0.Add(time.Minute)
	expired.ExpiresAt = &past
	must(t, s.CreateReport(ctx, expired))
	must(t, s.CreateReport(ctx, revoked))
	must(t, s.RevokeReport(ctx, a.ID, revoked.ID, t0))
	var created, refused atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch err := s.CreateReportWithin(ctx, report(t0.Add(time.Hour)), 3); {
			case err == nil:
				created.Add(1)
			case errors.Is(err, store.ErrLimit):
				refused.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if created.Load() != 3 || refused.Load() != 17 {
		t.Errorf("%d created, %d refused; want 3 and 17", created.Load(), refused.Load())
	}
}

func testReports(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	sc := completedScan(t, s, site, t0, 90)
	secret, hash := store.NewSecret("")
	exp := t0.Add(30 * 24 * time.Hour)
	r := store.Report{ID: store.NewID(), TokenHash: hash, ScanID: sc.ID, UserID: a.ID, Title: "Q4", CreatedAt: t0, ExpiresAt: &exp}
	must(t, s.CreateReport(ctx, r))
	never := store.Report{ID: store.NewID(), TokenHash: store.HashSecret("n"), ScanID: sc.ID, UserID: a.ID, Title: "forever", CreatedAt: t0.Add(time.Second)}
	must(t, s.CreateReport(ctx, never))
	got, err := s.ReportByHash(ctx, store.HashSecret(secret))
	must(t, err)
	if got.ID != r.ID || got.SiteID != site.ID || got.ExpiresAt == nil || !got.ExpiresAt.Equal(exp) || got.RevokedAt != nil {
		t.Errorf("report = %+v", got)
	}
	list, _ := s.ReportsOf(ctx, a.ID)
	if len(list) != 2 || list[0].ID != never.ID || list[0].ExpiresAt != nil || list[0].SiteID != site.ID || list[1].SiteID != site.ID {
		t.Errorf("reports = %+v", list)
	}
	scan, rsite, results, err := s.ReportScan(ctx, got)
	must(t, err)
	if scan.ID != sc.ID || rsite.ID != site.ID || len(results) != 1 {
		t.Errorf("report scan = %v %v %d", scan.ID, rsite.ID, len(results))
	}
	must(t, s.RevokeReport(ctx, a.ID, r.ID, t0.Add(time.Hour)))
	got, _ = s.ReportByHash(ctx, hash)
	if got.RevokedAt == nil {
		t.Error("not revoked")
	}
	_, err = s.ReportByHash(ctx, store.HashSecret("nope"))
	wantErr(t, err, store.ErrNotFound)
}

func testDeliveries(t *testing.T, s store.Store) {
	seen, err := s.SeenDelivery(ctx, "h", t0.Add(-10*time.Minute), t0)
	must(t, err)
	if seen {
		t.Error("first delivery reported as seen")
	}
	seen, _ = s.SeenDelivery(ctx, "h", t0.Add(-5*time.Minute), t0.Add(5*time.Minute))
	if !seen {
		t.Error("replay within the window not seen")
	}
	seen, _ = s.SeenDelivery(ctx, "h", t0.Add(1*time.Minute), t0.Add(11*time.Minute))
	if seen {
		t.Error("delivery after the window reported as seen")
	}
	// A key older than the window is pruned by a later delivery: asked again with a since
	// before it was seen, it is new, not remembered.
	_, err = s.SeenDelivery(ctx, "old", t0.Add(-2*time.Hour), t0.Add(-time.Hour))
	must(t, err)
	_, err = s.SeenDelivery(ctx, "next", t0.Add(50*time.Minute), t0.Add(time.Hour))
	must(t, err)
	if seen, _ = s.SeenDelivery(ctx, "old", t0.Add(-2*time.Hour), t0.Add(time.Hour)); seen {
		t.Error("a key older than the window was kept")
	}
	var fresh atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen, err := s.SeenDelivery(ctx, "burst", t0.Add(-10*time.Minute), t0)
			if err != nil {
				t.Error(err)
			}
			if !seen {
				fresh.Add(1)
			}
		}()
	}
	wg.Wait()
	if fresh.Load() != 1 {
		t.Errorf("%d of 50 identical deliveries were fresh, want 1", fresh.Load())
	}

	// A delivery whose effect failed is forgotten: its retry is fresh, other keys stay seen.
	_, err = s.SeenDelivery(ctx, "kept", t0.Add(-10*time.Minute), t0)
	must(t, err)
	must(t, s.ForgetDelivery(ctx, "burst", "never-recorded"))
	if seen, _ := s.SeenDelivery(ctx, "burst", t0.Add(-10*time.Minute), t0); seen {
		t.Error("a forgotten delivery is still seen")
	}
	if seen, _ := s.SeenDelivery(ctx, "kept", t0.Add(-10*time.Minute), t0); !seen {
		t.Error("forgetting one delivery forgot another")
	}
}

func testDeleteSite(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	sc := completedScan(t, s, site, t0, 50)
	must(t, s.CreateReport(ctx, store.Report{ID: store.NewID(), TokenHash: "rh", ScanID: sc.ID, UserID: a.ID, Title: "t", CreatedAt: t0}))
	must(t, s.DeleteSite(ctx, a.ID, site.ID))
	_, err := s.Scan(ctx, a.ID, sc.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.ReportByHash(ctx, "rh")
	wantErr(t, err, store.ErrNotFound)
	_, _, err = s.ScanForJob(ctx, sc.ID)
	wantErr(t, err, store.ErrNotFound)
	must(t, s.Ping(ctx))
}

// testLastScans: SiteListings gives each site its newest scan of any status, the same as
// ScansOf's first, for the owner's sites only; a site never scanned has none.
func testLastScans(t *testing.T, s store.Store) {
	a, b := newUser(t, s, "a@example.com"), newUser(t, s, "b@example.com")
	done := newSite(t, s, a, "done")
	completedScan(t, s, done, t0, 70)
	newest := completedScan(t, s, done, t0.Add(time.Hour), 60)
	queued := newSite(t, s, a, "queued")
	completedScan(t, s, queued, t0, 50)
	inFlight := enqueue(t, s, queued, t0.Add(2*time.Hour))
	never := newSite(t, s, a, "never scanned")
	other := newSite(t, s, b, "other")
	completedScan(t, s, other, t0, 40)

	listings, err := s.SiteListings(ctx, a.ID, "")
	must(t, err)
	last := map[string]string{}
	for _, l := range listings {
		if l.LastScan == nil {
			last[l.ID] = ""
			continue
		}
		last[l.ID] = l.LastScan.ID
		first, _ := s.ScansOf(ctx, a.ID, l.ID, 1)
		if !reflect.DeepEqual(*l.LastScan, first[0]) {
			t.Errorf("site %s: last %+v, ScansOf's first %+v", l.ID, *l.LastScan, first[0])
		}
	}
	if want := map[string]string{done.ID: newest.ID, queued.ID: inFlight.ID, never.ID: ""}; !reflect.DeepEqual(last, want) {
		t.Errorf("last scans = %v, want %v", last, want)
	}
	if got, err := s.SiteListings(ctx, "not-a-uuid", ""); err != nil || len(got) != 0 {
		t.Errorf("malformed user: %v %v", got, err)
	}
}
