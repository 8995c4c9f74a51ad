package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"

	"sitepulse/scanner/notify"
	"sitepulse/scanner/platform"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/postgres"
	"sitepulse/store/storetest"
)

// newDatabase creates an empty database beside DATABASE_URL's, dropped when the test ends, and
// answers its DSN: pg_dump and pg_restore work on whole databases, as an operator's would.
func newDatabase(t *testing.T, admin *sql.DB, base *url.URL, name string) string {
	t.Helper()
	if _, err := admin.Exec(`CREATE DATABASE ` + pq.QuoteIdentifier(name)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(`DROP DATABASE IF EXISTS ` + pq.QuoteIdentifier(name) + ` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u := *base
	u.Path = "/" + name
	return u.String()
}

// tableCounts is every table of the database's public schema with its rows, and which of them
// are partitions (pg_class.relispartition) of a partitioned table.
func tableCounts(t *testing.T, dsn string) (counts map[string]int, partitions map[string]bool) {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// relkind r: a plain table or a partition; p: a partitioned table, whose count is its
	// partitions' rows.
	rows, err := db.Query(`SELECT c.relname, c.relispartition FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	partitions = map[string]bool{}
	for rows.Next() {
		var n string
		var part bool
		if err := rows.Scan(&n, &part); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
		partitions[n] = part
	}
	rows.Close()
	counts = map[string]int{}
	for _, n := range names {
		var c int
		if err := db.QueryRow(`SELECT count(*) FROM ` + pq.QuoteIdentifier(n)).Scan(&c); err != nil {
			t.Fatal(err)
		}
		counts[n] = c
	}
	return counts, partitions
}

func pgTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing; CI=true needs it (apt-get install postgresql-client)", name)
		}
		t.Skipf("%s is missing (apt-get install postgresql-client)", name)
	}
	return p
}

// A database with a user, a session, an API key, an OAuth client, a site with budgets, access
// settings and a completed scan with its page results, an alert channel with a sealed URL and
// secret, and a sealed platform connection is dumped with pg_dump -Fc and restored with
// pg_restore into a new database, with a row in every other table too (runners, beacon, CrUX,
// SSO; partitions are counted, see below). Every table has the same rows; the binary started on the
// restored database with the same AUTH_KEY and PLATFORM_TOKEN_KEY serves the site and its scan
// to the session, takes the API key, delivers an alert through the sealed channel URL to a
// local receiver, and the platform token and access setting open. With another
// PLATFORM_TOKEN_KEY none of the sealed values opens: they are lost.
func TestSystemBackupAndRestore(t *testing.T) {
	if runAsChild() {
		return
	}
	pgDump, pgRestore := pgTool(t, "pg_dump"), pgTool(t, "pg_restore")
	if os.Getenv("DATABASE_URL") == "" {
		storetest.Postgres(t) // skips, or fails under CI=true, as every Postgres test does
	}
	base, err := url.Parse(os.Getenv("DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("postgres", base.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() }) // after the databases' drops (cleanups run last first); a defer ran before them
	suffix := strings.ToLower(store.NewID()[:8])
	srcDSN := newDatabase(t, admin, base, "sitepulse_backup_"+suffix)
	dstDSN := newDatabase(t, admin, base, "sitepulse_restore_"+suffix)

	raw := make([]byte, 32)
	rand.Read(raw)
	keySpec := base64.StdEncoding.EncodeToString(raw)
	rand.Read(raw)
	authKey := base64.StdEncoding.EncodeToString(raw)
	keys, _ := platform.ParseKeys(keySpec)

	ctx := context.Background()
	st, err := postgres.Open(ctx, srcDSN, postgres.Pool{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	user := store.User{ID: store.NewID(), Email: "backup@example.com", PasswordHash: "x", CreatedAt: now}
	site := store.Site{ID: store.NewID(), UserID: user.ID, Name: "Backed-up Site", Domain: "backup.test", PlatformSiteID: "plat-backup",
		Pages: scantest.SamplePages(), CreatedAt: now}
	session, sessionHash := store.NewSecret("")
	apiKey, apiKeyHash := store.NewSecret("svc_")
	chURL, chSecret := "", "whsec_restored"
	var mu sync.Mutex
	received := map[string]int{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received[r.Header.Get("X-SitePulse-Delivery")]++
		mu.Unlock()
	}))
	t.Cleanup(recv.Close)
	chURL = recv.URL + "/hook"
	sealedURL, _ := keys.SealFor(platform.PurposeChannelURL, chURL, user.ID)
	sealedSecret, _ := keys.SealFor(platform.PurposeChannelSecret, chSecret, user.ID)
	sealedToken, _ := keys.SealFor(platform.PurposePlatformToken, "platform-token-xyz", user.ID)
	ch := store.Channel{ID: store.NewID(), WorkspaceID: user.ID, Kind: store.ChannelWebhook, Name: "restored", URLSealed: sealedURL,
		SecretSealed: sealedSecret, Events: []string{store.EventScanFailed}, CreatedAt: now}
	for _, err := range []error{
		st.CreateUser(ctx, user),
		st.CreateSite(ctx, site),
		st.CreateSession(ctx, store.Session{TokenHash: sessionHash, UserID: user.ID, CSRF: "csrf", CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}),
		st.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: user.ID, Name: "ci", KeyHash: apiKeyHash, Prefix: apiKey[:12], Scope: store.ScopeAll, CreatedAt: now}),
		st.CreateClient(ctx, store.OAuthClient{ID: "c_" + store.NewID(), Name: "Client", RedirectURIs: []string{"http://127.0.0.1:9/cb"},
			GrantTypes: []string{"authorization_code", "refresh_token"}, AuthMethod: "none", Scope: "sites:read", CreatedAt: now}),
		st.SetBudgets(ctx, user.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 100}}),
		st.CreateChannel(ctx, user.ID, ch),
		st.SavePlatformConnection(ctx, store.PlatformConnection{WorkspaceID: user.ID, TokenSealed: sealedToken, Scopes: platform.ScriptScopes, CreatedAt: now}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// A real scan, so scans, page results, publishes and the follow-up jobs are there too.
	psi := scantest.NewPSI(t, "testdata/psi")
	env := map[string]string{"DATABASE_URL": srcDSN, "PAGESPEED_API_URL": psi.Endpoint(), "PLATFORM_CLIENT_SECRET": scaleSecret,
		"PLATFORM_TOKEN_KEY": keySpec, "AUTH_KEY": authKey, "SCAN_ALLOW_PRIVATE": "true", "AUDIT_BACKEND": "psi"}
	src := startChild(t, "source", env)
	if code, err := publish(src.base, scaleSecret, site.PlatformSiteID); err != nil || code != http.StatusOK {
		t.Fatalf("publish: %d %v", code, err)
	}
	var scans []store.Scan
	if !storetest.Eventually(func() bool {
		scans, _ = st.ScansOf(ctx, user.ID, site.ID, 1)
		return len(scans) == 1 && scans[0].Status == store.StatusComplete
	}) {
		t.Fatalf("the scan did not complete:\n%s", src.log)
	}
	src.stop(t)
	// Every other kind of row: alert rules, a report link, a team workspace (with a security log line)
	// and an invitation, account links, a login throttle, a delivery, the OAuth flow's request,
	// code, tokens and consent, a platform connect state.
	reportToken, reportHash := store.NewSecret("")
	codeHash, tokenHash := store.HashSecret("code"), store.HashSecret("token")
	clientID := "c_" + store.NewID()
	team := store.Workspace{ID: store.NewID(), Name: "Team", CreatedAt: now}
	later := now.Add(time.Hour)
	family := store.NewID()
	for _, err := range []error{
		st.AddAlertRule(ctx, user.ID, store.AlertRule{ID: store.NewID(), SiteID: site.ID, Metric: "seo", Operator: store.OpMin, Threshold: 80, CreatedAt: now}),
		st.CreateReport(ctx, store.Report{ID: store.NewID(), TokenHash: reportHash, ScanID: scans[0].ID, UserID: user.ID, WorkspaceID: user.ID, Title: "Restored report", CreatedAt: now}),
		st.CreateWorkspace(ctx, team, user.ID, 10),
		func() error {
			_, err := st.AppendLog(ctx, store.LogEvent{WorkspaceID: team.ID, ActorID: user.ID, ActorEmail: user.Email, Kind: store.LogWorkspaceCreated, Target: team.Name, At: now})
			return err
		}(),
		st.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: store.HashSecret("invite"), WorkspaceID: team.ID, Email: "guest@example.com",
			Role: store.RoleViewer, InvitedBy: user.ID, CreatedAt: now, ExpiresAt: later}),
		st.CreateAccountLink(ctx, store.AccountLink{TokenHash: store.HashSecret("reset"), UserID: user.ID, Purpose: store.LinkReset, CreatedAt: now, ExpiresAt: later}),
		st.RecordDelivery(ctx, user.ID, store.Delivery{ID: store.NewID(), ChannelID: ch.ID, EventID: "evt_before", EventType: store.EventScanFailed,
			State: store.DeliveryDelivered, Attempts: 1, LastStatus: 200, CreatedAt: now}),
		st.CreateClient(ctx, store.OAuthClient{ID: clientID, Name: "Flow", RedirectURIs: []string{"http://127.0.0.1:9/cb"},
			GrantTypes: []string{"authorization_code", "refresh_token"}, AuthMethod: "none", Scope: "sites:read", CreatedAt: now}),
		st.CreateAuthRequest(ctx, store.AuthRequest{IDHash: store.HashSecret("request"), UserID: user.ID, ClientID: clientID, RedirectURI: "http://127.0.0.1:9/cb",
			State: "s", CodeChallenge: "c", Scope: "sites:read", CreatedAt: now, ExpiresAt: later}),
		st.CreateCode(ctx, store.AuthCode{CodeHash: codeHash, ClientID: clientID, UserID: user.ID, RedirectURI: "http://127.0.0.1:9/cb", CodeChallenge: "c",
			Scope: "sites:read", FamilyID: family, CreatedAt: now, ExpiresAt: later}),
		st.RedeemCode(ctx, codeHash, now, store.OAuthToken{TokenHash: tokenHash, Kind: "access", ClientID: clientID, UserID: user.ID, FamilyID: family,
			Scope: "sites:read", CreatedAt: now, ExpiresAt: later}),
		st.SaveConsent(ctx, store.Consent{UserID: user.ID, ClientID: clientID, ClientName: "Flow", Scope: "sites:read", CreatedAt: now}),
		st.CreatePlatformState(ctx, store.HashSecret("state"), user.ID, now, later),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.TakeLoginAttempt(ctx, "ip:127.0.0.1", now, store.LoginLimit{Burst: 10, Window: time.Hour, Every: time.Minute}); err != nil {
		t.Fatal(err)
	}
	// Set after the scan: PSI never audits a site signed in.
	sealedAccess, _ := keys.SealFor(platform.PurposeSiteAccess,
		store.Access{Kind: store.AccessBasic, Username: "u", Password: "p"}.Encode(), store.AccessSealedFor(site.ID, "https://backup.test"))
	if err := st.SetSiteAccess(ctx, user.ID, store.SiteAccess{SiteID: site.ID, Kind: store.AccessBasic, Sealed: sealedAccess, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}

	// The features merged beside the partitions: a runner token and a queued runner audit, the
	// site's runner locations, its beacon key and a beacon day (a histogram bin and a slow
	// interaction), a CrUX record (its point and its fetch), an identity at an OpenID provider,
	// and the team's SSO rule and own provider.
	beaconDay := store.BeaconDay(now)
	lcp := 2100.0
	sealedRefresh, _ := keys.SealFor("sso refresh token", "refresh-xyz", "https://idp.example.com\x00sub-backup")
	sealedClient, _ := keys.SealFor("sso client secret", "client-secret-xyz", team.ID)
	for _, err := range []error{
		st.CreateRunnerToken(ctx, store.RunnerToken{ID: store.NewID(), WorkspaceID: team.ID, Name: "backup runner", TokenHash: store.HashSecret("runner"),
			Prefix: "rt_backup", CreatedAt: now}),
		st.EnqueueRunnerAudit(ctx, store.RunnerAudit{ID: store.NewID(), WorkspaceID: user.ID, SiteID: site.ID, ScanID: scans[0].ID,
			PageURL: "https://backup.test/", Strategy: store.StrategyMobile, CreatedAt: now}),
		st.SetSiteLocations(ctx, site.ID, []string{"eu-west"}),
		func() error { _, err := st.BeaconKey(ctx, user.ID, site.ID); return err }(),
		func() error {
			_, err := st.AddBeacons(ctx, store.BeaconBatch{
				Counts: []store.BeaconCount{{SiteID: site.ID, Day: beaconDay, Path: "/", Device: store.FieldPhone, Metric: "lcp",
					Bin: store.BeaconBin("lcp", lcp), Count: 1, Kept: 1}},
				Interactions: []store.BeaconInteractionCount{{SiteID: site.ID, Day: beaconDay, Path: "/", Device: store.FieldPhone, Selector: "button#buy",
					EventType: "click", Part: "inp", Bin: store.BeaconBin(store.BeaconPhaseMetric, 300), Count: 1, Seen: now}},
				Seen: []store.BeaconSeen{{SiteID: site.ID, Day: beaconDay, Seen: 1}},
			})
			return err
		}(),
		st.SaveCrux(ctx, site.ID, store.CruxRecord{Device: store.FieldPhone, Found: true, Points: []store.FieldPoint{{Source: store.FieldCrUX,
			Device: store.FieldPhone, Metric: "lcp", Start: beaconDay.AddDate(0, 0, -28), End: beaconDay, P75: &lcp}}}, now),
		st.LinkIdentity(ctx, store.Identity{Issuer: "https://idp.example.com", Subject: "sub-backup", UserID: user.ID, Email: user.Email,
			RefreshSealed: sealedRefresh, CreatedAt: now, CheckedAt: now}),
		st.SetWorkspaceSSO(ctx, user.ID, store.WorkspaceSSO{WorkspaceID: team.ID, Domain: "backup-team.test", Token: "sso-token", UpdatedAt: now}),
		st.SetWorkspaceProvider(ctx, user.ID, store.WorkspaceProvider{WorkspaceID: team.ID, Issuer: "https://idp.backup-team.test",
			ClientID: "team-client", SecretSealed: sealedClient, UpdatedAt: now}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}

	st.Close()
	// page_results and page_images are partitioned by month (migration 043): the parent holds no
	// row itself, and counts its partitions' rows; the default partition and the months ahead are
	// empty by design (the scan lands in this month's). So a partition need not have a row (its
	// parent must), while every table, partitions included, must have as many rows after the
	// restore as before it. Seeding a row into each month would need scans dated in the future,
	// which no real database holds.
	before, partitions := tableCounts(t, srcDSN)
	var empty []string
	for name, n := range before {
		if n == 0 && !partitions[name] {
			empty = append(empty, name)
		}
	}
	if len(empty) > 0 {
		t.Errorf("tables with no row before the dump (give them one above): %v", empty)
	}
	nParts := 0
	for _, part := range partitions {
		if part {
			nParts++
		}
	}
	t.Logf("%d tables and %d partitions, every table with rows, dumped and restored", len(before)-nParts, nParts)

	dump := t.TempDir() + "/sitepulse.dump"
	if out, err := exec.Command(pgDump, "-Fc", "--no-owner", "-f", dump, "-d", srcDSN).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	if out, err := exec.Command(pgRestore, "--no-owner", "--exit-on-error", "-d", dstDSN, dump).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	after, _ := tableCounts(t, dstDSN)
	for name, n := range before {
		if after[name] != n {
			t.Errorf("table %s: %d rows before the dump, %d after the restore", name, n, after[name])
		}
	}

	// The binary on the restored database with the same keys.
	env["DATABASE_URL"] = dstDSN
	restored := startChild(t, "restored", env)
	get := func(path string, header ...string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, restored.base+path, nil)
		for i := 0; i < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/sites/"+site.ID, "Cookie", "session="+session); code != http.StatusOK || !strings.Contains(body, site.Name) {
		t.Errorf("the site page to the restored session: %d", code)
	}
	if code, _ := get("/sites/"+site.ID+"/scans/"+scans[0].ID, "Cookie", "session="+session); code != http.StatusOK {
		t.Errorf("the scan page to the restored session: %d", code)
	}
	if code, body := get("/api/external/scans/"+scans[0].ID, "Authorization", "Bearer "+apiKey); code != http.StatusOK || !strings.Contains(body, "complete") {
		t.Errorf("the scan to the restored API key: %d %s", code, body)
	}
	if code, body := get("/report/" + reportToken); code != http.StatusOK || !strings.Contains(body, "Restored report") {
		t.Errorf("the restored report link: %d", code)
	}
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz on the restored database: %d", code)
	}
	// An alert through the channel's sealed URL reaches the receiver.
	rst, err := postgres.Open(ctx, dstDSN, postgres.Pool{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rst.Close()
	e := notify.Event{ID: "evt_restored", Type: store.EventScanFailed, CreatedAt: time.Now(),
		Site: notify.EventSite{ID: site.ID, Name: site.Name, Domain: site.Domain}, Data: notify.EventDetail{Reason: "restore test"}}
	d := store.Delivery{ID: store.NewID(), ChannelID: ch.ID, EventID: e.ID, EventType: e.Type, State: store.DeliveryPending, CreatedAt: time.Now()}
	if n, err := rst.PlanDeliveries(ctx, user.ID, []store.Delivery{d}, []store.JobArgs{notify.Dispatch{WorkspaceID: user.ID, ChannelID: ch.ID, Event: e}}, time.Now()); err != nil || n != 1 {
		t.Fatalf("planned %d, %v", n, err)
	}
	if !storetest.Eventually(func() bool { mu.Lock(); defer mu.Unlock(); return received["evt_restored"] > 0 }) {
		t.Errorf("the alert through the restored channel never arrived:\n%s", restored.log)
	}
	restored.stop(t)
	conn, err := rst.PlatformConnection(ctx, user.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := keys.OpenFor(platform.PurposePlatformToken, conn.TokenSealed, user.ID); err != nil || tok != "platform-token-xyz" {
		t.Errorf("the restored platform token does not open: %v", err)
	}
	if !conn.Granted(platform.ScriptScopes...) {
		t.Errorf("the restored platform connection lost its scopes: %v", conn.Scopes)
	}
	access, err := rst.SiteAccessForScan(ctx, site.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.OpenFor(platform.PurposeSiteAccess, access.Sealed, store.AccessSealedFor(site.ID, "https://backup.test")); err != nil {
		t.Errorf("the restored access setting does not open: %v", err)
	}
	// What another PLATFORM_TOKEN_KEY loses: every sealed value.
	other := platform.RandomKeys()
	for what, sealed := range map[string][3]string{
		"channel URL":               {platform.PurposeChannelURL, sealedURL, user.ID},
		"channel secret":            {platform.PurposeChannelSecret, sealedSecret, user.ID},
		"platform token":            {platform.PurposePlatformToken, conn.TokenSealed, user.ID},
		"access setting":            {platform.PurposeSiteAccess, access.Sealed, store.AccessSealedFor(site.ID, "https://backup.test")},
		"SSO refresh token":         {"sso refresh token", sealedRefresh, "https://idp.example.com\x00sub-backup"},
		"workspace provider secret": {"sso client secret", sealedClient, team.ID},
	} {
		if _, err := other.OpenFor(sealed[0], sealed[1], sealed[2]); err == nil {
			t.Errorf("the %s opened with another PLATFORM_TOKEN_KEY", what)
		}
	}
	// The binary on the restored database with other keys: the hashed credentials still work
	// (the session, the API key), but an alert is given up at once, saying the channel must be
	// added again, and never reaches the receiver.
	rand.Read(raw)
	env["PLATFORM_TOKEN_KEY"] = base64.StdEncoding.EncodeToString(raw)
	rand.Read(raw)
	env["AUTH_KEY"] = base64.StdEncoding.EncodeToString(raw)
	restored = startChild(t, "restored with other keys", env)
	if code, _ := get("/sites/"+site.ID, "Cookie", "session="+session); code != http.StatusOK {
		t.Errorf("the site page to the restored session, other keys: %d", code)
	}
	if code, _ := get("/api/external/scans/"+scans[0].ID, "Authorization", "Bearer "+apiKey); code != http.StatusOK {
		t.Errorf("the scan to the restored API key, other keys: %d", code)
	}
	e.ID = "evt_other_key"
	d = store.Delivery{ID: store.NewID(), ChannelID: ch.ID, EventID: e.ID, EventType: e.Type, State: store.DeliveryPending, CreatedAt: time.Now()}
	if n, err := rst.PlanDeliveries(ctx, user.ID, []store.Delivery{d}, []store.JobArgs{notify.Dispatch{WorkspaceID: user.ID, ChannelID: ch.ID, Event: e}}, time.Now()); err != nil || n != 1 {
		t.Fatalf("planned %d, %v", n, err)
	}
	var lost store.Delivery
	if !storetest.Eventually(func() bool {
		ds, err := rst.DeliveriesOf(ctx, user.ID, user.ID, ch.ID, 10)
		for _, x := range ds {
			if x.EventID == e.ID && x.State == store.DeliveryFailed {
				lost = x
			}
		}
		return err != nil || lost.ID != ""
	}) {
		t.Fatalf("the alert under another key was not given up:\n%s", restored.log)
	}
	restored.stop(t)
	mu.Lock()
	if received[e.ID] > 0 {
		t.Error("an alert reached the receiver through a URL sealed under another key")
	}
	mu.Unlock()
	if !strings.Contains(lost.LastError, "does not open") {
		t.Errorf("the lost delivery says %q, want that the sealed URL does not open", lost.LastError)
	}
	t.Logf("with another PLATFORM_TOKEN_KEY: %q", lost.LastError)
}
