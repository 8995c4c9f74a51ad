package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// A process killed with SIGKILL right after a scan completed, before its digest could be sent:
// the digest is a job enqueued in the transaction that completed the scan, so another process
// sends it, once.
func TestSystemDigestSurvivesAKillAfterTheScanCompletes(t *testing.T) {
	if runAsChild() {
		return
	}
	ctx := context.Background()
	st, dsn := storetest.PostgresDSN(t)
	user := store.User{ID: store.NewID(), Email: "digest@example.com", PasswordHash: "x", NotifyRegressions: true, CreatedAt: time.Now()}
	site := store.Site{ID: store.NewID(), UserID: user.ID, Name: "Sample", Domain: "sample.test",
		Pages: scantest.SamplePages(), CreatedAt: time.Now()}
	for _, err := range []error{st.CreateUser(ctx, user), st.CreateSite(ctx, site)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	scanOf := func() store.Scan {
		t.Helper()
		sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: time.Now()}
		if err := st.EnqueueScan(ctx, sc, store.KindScan, time.Now()); err != nil {
			t.Fatal(err)
		}
		return sc
	}
	waitComplete := func(scanID string, logs interface{ String() string }) {
		t.Helper()
		var sc store.Scan
		var err error
		storetest.Eventually(func() bool {
			sc, err = st.Scan(ctx, user.ID, scanID)
			return err != nil || sc.Status == store.StatusComplete || sc.Status == store.StatusFailed
		})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Status != store.StatusComplete {
			t.Fatalf("scan %s (%s):\n%s", sc.Status, sc.Error, logs)
		}
	}
	env := func(psi *scantest.PSI, smtp *scantest.SMTP) map[string]string {
		return map[string]string{"DATABASE_URL": dsn, "PAGESPEED_API_URL": psi.Endpoint(), "SMTP_ADDR": smtp.Addr,
			"SMTP_FROM": "SitePulse <sitepulse@example.com>", "SCAN_WORKERS": "1", "SCAN_LEASE_SECONDS": "2"}
	}
	sent := scantest.NewSMTP(t, false)

	// The first scan, before the regressions: nothing to compare with, no digest.
	first := scanOf()
	_, logs, stop := startRun(t, env(scantest.NewPSI(t, "testdata/psi-before"), sent))
	waitComplete(first.ID, logs)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// The second scan regresses. Its process cannot send mail (the server refuses it) and is
	// killed as soon as the scan is complete.
	second := scanOf()
	child := startChild(t, "child", env(scantest.NewPSI(t, "testdata/psi"), scantest.NewSMTP(t, true)))
	waitComplete(second.ID, child.log)
	child.kill() // SIGKILL: no shutdown, no release
	if n := len(sent.Messages()); n != 0 {
		t.Fatalf("%d digests sent before the kill, want 0", n)
	}
	// If the dead process held the digest's job, its lease lapses and the second process's
	// rescuer returns it: not at once, since a claim the dead process sent may still be
	// executing in Postgres after the kill.

	_, logs, stop = startRun(t, env(scantest.NewPSI(t, "testdata/psi"), sent))
	if !storetest.Eventually(func() bool { return len(sent.Messages()) > 0 }) {
		var jobs []string
		for id := int64(1); id <= 8; id++ {
			if j, err := st.Job(ctx, id); err == nil {
				jobs = append(jobs, fmt.Sprintf("%+v", j))
			}
		}
		t.Fatalf("no digest sent by the second process in %s; jobs:\n%s\nthe killed one said:\n%s\nthe second:\n%s",
			storetest.Timeout(), strings.Join(jobs, "\n"), child.log, logs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	msgs := sent.Messages()
	if len(msgs) != 1 || msgs[0].To != user.Email || !strings.Contains(msgs[0].Data, second.ID) {
		t.Fatalf("%d digests, want 1 to %s about scan %s: %+v", len(msgs), user.Email, second.ID, msgs)
	}
	t.Logf("the killed process had tried to send the digest %d times", strings.Count(child.log.String(), "digest: sending failed"))
}
