package scanner

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"

	"sitepulse/scanner/notify"
	"sitepulse/scanner/psi"
)

const (
	beforeDir = "../testdata/psi-before" // the sample site before a bad publish
	afterDir  = "../testdata/psi"        // after it: home and pricing regress
)

// confirmScan runs one scan of the rig's site on psi with re-audits on, mailing through digest.
func (r *rig) confirmScan(fake *scantest.PSI, digest *notify.Digest) store.Scan {
	r.t.Helper()
	p := r.pool(func(c *PoolConfig) {
		c.Auditor, c.ConfirmRuns = psi.New(psi.Config{Endpoint: fake.Endpoint(), Client: fake.Client()}), 2
		withDigest(c, digest)
	})
	sc := r.wait(r.enqueue(r.site).ID)
	p.Stop(context.Background())
	r.sendDigests(p)
	return sc
}

func TestConfirmedRegressions(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			st := b.Open(t)
			r := newRig(t, st)
			fake := scantest.NewInProcess(beforeDir)
			smtpSrv := scantest.NewSMTP(t, false)
			digest := &notify.Digest{Store: st, SMTPAddr: smtpSrv.Addr, From: "SitePulse <sitepulse@example.com>", BaseURL: "http://sitepulse.test",
				Log: slog.New(slog.NewTextHandler(r.logs, nil))}
			ctx := context.Background()

			r.confirmScan(fake, digest)
			if got := fake.Total(); got != 10 {
				t.Fatalf("the first scan made %d PSI calls, want 10: nothing to compare with, nothing re-audited", got)
			}
			// Home on mobile regresses on its first run only; pricing on mobile on every run.
			fake.Sequence("/", "mobile", afterDir, beforeDir)
			fake.Sequence("/pricing", "mobile", afterDir)
			sc := r.confirmScan(fake, digest)
			if sc.Status != store.StatusComplete {
				t.Fatalf("second scan %s: %s", sc.Status, sc.Error)
			}
			if got, want := fake.Total()-10, 8+3+3; got != want {
				t.Errorf("the second scan made %d PSI calls, want %d: 8 unchanged audits once, 2 suspect ones 3 times", got, want)
			}
			for _, c := range []struct {
				path       string
				strategy   store.Strategy
				runs, perf int
			}{{"/", "mobile", 3, 49}, {"/pricing", "mobile", 3, 44}, {"/", "desktop", 1, 92}} {
				res, err := st.PageResult(ctx, r.user.ID, sc.ID, c.path, c.strategy)
				if err != nil {
					t.Fatal(err)
				}
				if res.Runs != c.runs || *res.Scores.Performance != c.perf {
					t.Errorf("%s %s: runs %d, performance %d; want %d runs, %d", c.path, c.strategy, res.Runs, *res.Scores.Performance, c.runs, c.perf)
				}
			}
			scans, _ := st.CompletedScans(ctx, r.user.ID, r.site.ID, 2)
			old, _ := st.PageResults(ctx, r.user.ID, scans[1].ID)
			now, _ := st.PageResults(ctx, r.user.ID, scans[0].ID)
			regs := analysis.Regressions(old, now)
			for _, reg := range regs {
				if reg.PagePath != "/pricing" || reg.Strategy != "mobile" {
					t.Errorf("regression reported on %s %s: %+v", reg.PagePath, reg.Strategy, reg)
				}
			}
			if len(regs) == 0 {
				t.Fatal("pricing's confirmed regression is not reported")
			}
			msgs := smtpSrv.Messages()
			if len(msgs) != 1 || !strings.Contains(msgs[0].Data, "/pricing") {
				t.Fatalf("%d digests, want 1 naming /pricing", len(msgs))
			}
			if !strings.Contains(r.logs.String(), "regression re-audited") {
				t.Error("the re-audits were not logged")
			}
		})
	}
}

func TestConfirmationKeepsTheRunsThatSucceeded(t *testing.T) {
	st := memory.New()
	r := newRig(t, st)
	fake := scantest.NewInProcess(beforeDir)
	r.confirmScan(fake, nil)
	// Home on mobile regresses, then both re-audits fail: the one run that succeeded is kept.
	fake.Sequence("/", "mobile", afterDir, t.TempDir())
	sc := r.confirmScan(fake, nil)
	res, err := st.PageResult(context.Background(), r.user.ID, sc.ID, "/", "mobile")
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 1 || *res.Scores.Performance != 16 {
		t.Errorf("runs %d, performance %d; want the first run alone: 1 run, 16", res.Runs, *res.Scores.Performance)
	}
	if got := fake.Calls("/", "mobile"); got != 1+1+2 {
		t.Errorf("%d calls for home on mobile, want 4: one per scan and two re-audits", got)
	}
	if !strings.Contains(r.logs.String(), "re-audit failed") {
		t.Error("the failed re-audits were not logged")
	}
}

// Re-audits go through the same PSI client as every audit, so they count against the daily
// limit: a limit of exactly the two scans' 10 + 14 calls is spent by them.
func TestReauditsCountAgainstTheDailyLimit(t *testing.T) {
	st := memory.New()
	r := newRig(t, st)
	fake := scantest.NewInProcess(beforeDir)
	daily := psi.NewDailyCounter(10 + 14)
	client := psi.New(psi.Config{Endpoint: fake.Endpoint(), Client: fake.Client(), Daily: daily})
	scan := func() store.Scan {
		p := r.pool(func(c *PoolConfig) { c.Auditor, c.ConfirmRuns = client, 2 })
		defer p.Stop(context.Background())
		return r.wait(r.enqueue(r.site).ID)
	}
	scan()
	fake.Sequence("/", "mobile", afterDir, beforeDir)
	fake.Sequence("/pricing", "mobile", afterDir)
	if sc := scan(); sc.Status != store.StatusComplete {
		t.Fatalf("second scan %s: %s", sc.Status, sc.Error)
	}
	if spent, _ := daily.Spent(time.Now()); !spent || fake.Total() != 24 {
		t.Errorf("daily limit spent = %v after %d PSI calls, want spent after 24", spent, fake.Total())
	}
}

// Re-audits spend the account's daily audits too (USER_DAILY_AUDITS): with one audit left for
// them, a suspect page keeps the median of two runs, and the scan still completes.
func TestReauditsSpendTheAccountsDailyAudits(t *testing.T) {
	st := memory.New()
	r := newRig(t, st)
	home := r.addSite("Home", []string{"/"})
	fake := scantest.NewInProcess(beforeDir)
	quota := psi.NewAccountQuota(store.AuditLimits{Workspace: 2 + 3, Account: 1 << 30}, st, nil) // the first scan's 2 audits, the second's 2 and one re-audit
	scan := func() store.Scan {
		p := r.pool(func(c *PoolConfig) {
			c.Auditor, c.ConfirmRuns, c.Quota, c.Capacity = psi.New(psi.Config{Endpoint: fake.Endpoint(), Client: fake.Client()}), 2, quota, psi.NewCapacity(psi.CapacityConfig{MaxInFlight: 1})
		})
		defer p.Stop(context.Background())
		return r.wait(r.enqueue(home).ID)
	}
	scan()
	fake.Sequence("/", "desktop", afterDir, beforeDir)
	sc := scan()
	if sc.Status != store.StatusComplete {
		t.Fatalf("second scan %s: %s", sc.Status, sc.Error)
	}
	res, err := st.PageResult(context.Background(), r.user.ID, sc.ID, "/", "desktop")
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 2 || fake.Total() != 5 || !strings.Contains(r.logs.String(), "re-audit skipped") {
		t.Errorf("runs %d after %d PSI calls, want 2 runs after 5 and the skipped re-audit logged", res.Runs, fake.Total())
	}
}
