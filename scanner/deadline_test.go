package scanner

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"

	"sitepulse/scanner/psi"
)

func TestDeadlineReason(t *testing.T) {
	running := store.OverdueScan{Scan: store.Scan{Status: store.StatusRunning, PagesTotal: 10, PagesDone: 3}}
	with := func(o store.OverdueScan, lastErr string) store.OverdueScan { o.LastError = lastErr; return o }
	pageErr := func(msg string) []store.PageError {
		return []store.PageError{{PagePath: "/pricing", Strategy: "mobile", Error: msg}}
	}
	tests := []struct {
		name     string
		scan     store.OverdueScan
		pageErrs []store.PageError
		want     string
	}{
		{"PSI out of reach names the network and the setting",
			with(running, "PSI unavailable until 2026-11-24T12:00:00Z: 5 audits in a row failed; last: PSI request failed: dial tcp 127.0.0.1:9: connect: connection refused; scan snoozed"), nil,
			"Its audits could not reach PageSpeed Insights (connection refused): check the network or PAGESPEED_API_URL. The scan was stopped 30 minutes after it started: 3 of 10 audits done. Last error: PSI unavailable until 2026-11-24T12:00:00Z: 5 audits in a row failed; last: PSI request failed: dial tcp 127.0.0.1:9: connect: connection refused; scan snoozed."},
		{"server errors say PSI may be down, and list the failed audits",
			running, pageErr("PSI server error (HTTP 503) (gave up after 3 attempts)"),
			"Its audits got server errors from PageSpeed Insights: it may be down; scan again later. The scan was stopped 30 minutes after it started: 3 of 10 audits done, 1 failed (/pricing mobile: PSI server error (HTTP 503) (gave up after 3 attempts))."},
		{"an audit error the last error repeats is said once",
			with(running, "PSI unavailable until x: 5 audits in a row failed; last: PSI request failed: connection refused (gave up after 3 attempts); scan snoozed"),
			pageErr("PSI request failed: connection refused (gave up after 3 attempts)"),
			"Its audits could not reach PageSpeed Insights (connection refused): check the network or PAGESPEED_API_URL. The scan was stopped 30 minutes after it started: 3 of 10 audits done, 1 failed. Last error: PSI unavailable until x: 5 audits in a row failed; last: PSI request failed: connection refused (gave up after 3 attempts); scan snoozed."},
		{"a rejected key names the key setting", with(running, "PSI unavailable until x: PSI rejected the API key: PSI refused the request (HTTP 403)"), nil,
			"Its audits were refused by PageSpeed Insights (API key rejected): check PAGESPEED_API_KEY and that the API is enabled for it. The scan was stopped 30 minutes after it started: 3 of 10 audits done. Last error: PSI unavailable until x: PSI rejected the API key: PSI refused the request (HTTP 403)."},
		{"a spent daily quota says when scans resume", with(running, "PSI unavailable until x: PSI_DAILY_LIMIT of 5 calls reached for this quota day"), nil,
			"Its audits hit PSI_DAILY_LIMIT, the daily cap on PageSpeed Insights calls: scans resume after midnight Pacific time; raise PSI_DAILY_LIMIT for more. The scan was stopped 30 minutes after it started: 3 of 10 audits done. Last error: PSI unavailable until x: PSI_DAILY_LIMIT of 5 calls reached for this quota day."},
		{"Lighthouse failing on the pages points at the site", running, pageErr("Lighthouse runtime error NO_FCP: the page did not paint"),
			"Its audits could not be measured by Lighthouse (the page did not load as expected): open the page in a browser; the error below names Lighthouse's reason. The scan was stopped 30 minutes after it started: 3 of 10 audits done, 1 failed (/pricing mobile: Lighthouse runtime error NO_FCP: the page did not paint)."},
		{"a scan nobody picked up points at the workers", store.OverdueScan{Scan: store.Scan{Status: store.StatusQueued}}, nil,
			"No scanner picked it up: check that a SitePulse process with scan workers is running. The scan was stopped 30 minutes after it started."},
		{"an unknown failure still says what it saw", with(running, "read results: boom"), nil,
			"Its audits kept failing or waiting. The scan was stopped 30 minutes after it started: 3 of 10 audits done. Last error: read results: boom."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := deadlineReason(tt.scan, tt.pageErrs, 30*time.Minute); got != tt.want {
				t.Errorf("reason =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// A PSI answering 503 to everything opens the breaker, so the scan is snoozed again and again:
// the deadline ends it, failed with the reason, and the site's next scan runs.
func TestScanDeadline(t *testing.T) {
	onStores(t, storeTest{name: "the deadline ends a snoozed scan", fn: func(t *testing.T, st store.Store) {
		r := newRig(t, st)
		r.psi.FailAll(scantest.Fault{Status: 503, Body: `{"error":{"code":503,"message":"The service is currently unavailable."}}`})
		log := slog.New(slog.NewTextHandler(r.logs, nil))
		pool := r.pool(func(c *PoolConfig) {
			c.Auditor = psi.New(psi.Config{Endpoint: r.psi.Endpoint(), Client: r.psi.Client(), Backoff: time.Millisecond, Log: log,
				Breaker: psi.NewBreaker(psi.BreakerConfig{Failures: 2, OpenFor: 100 * time.Millisecond, Log: log})})
			c.Deadline, c.RescueEvery = 500*time.Millisecond, 50*time.Millisecond
		})
		failed := r.wait(r.enqueue(r.site).ID)
		if failed.Status != store.StatusFailed || !strings.HasPrefix(failed.Error, "Its audits got server errors from PageSpeed Insights") {
			t.Fatalf("scan = %s with %q, want failed with the reason", failed.Status, failed.Error)
		}
		if failed.CompletedAt == nil {
			t.Error("a failed scan has no end time")
		}

		pool.Stop(context.Background())

		// PSI is back; the next scan gets the default deadline, so a slow machine does not fail it.
		r.psi.Heal()
		pool = r.pool(nil)
		next := r.wait(r.enqueue(r.site).ID)
		if next.Status != store.StatusComplete {
			t.Fatalf("next scan = %s (%s), want complete", next.Status, next.Error)
		}
		if !strings.Contains(r.logs.String(), "scan failed: deadline passed") {
			t.Error("the deadline was not logged")
		}
	}})
}

func TestParkedForQuota(t *testing.T) {
	tests := []struct {
		lastError string
		want      bool
	}{
		{"", false},
		{"PSI unavailable until 24 Nov 2026, 12:09 UTC: 5 audits in a row failed; scan snoozed", false},
		{"PSI unavailable until 25 Nov 2026, 08:00 UTC: PSI_DAILY_LIMIT of 25000 calls reached for this quota day; scan snoozed", false},
		{(&psi.UnavailableError{What: "this workspace's scans wait", Reason: "past 17500 of the PSI key's 25000 daily audits " + psi.ShareMark + ", what is left is shared"}).Error() + "; scan snoozed", true},
		{(&psi.UnavailableError{What: "this workspace's scans wait", Reason: "the PSI key's last 2500 audits of the day " + psi.ReserveMark + " are kept"}).Error() + "; scan snoozed", true},
		{(&psi.UnavailableError{What: "this workspace's scans wait", Reason: "the PSI key's day of 25000 audits " + psi.KeyDayMark + " is used up"}).Error() + "; scan snoozed", true},
		{(&psi.UnavailableError{What: "this account's scans wait", Reason: "its daily budget of 2000 audits " + psi.QuotaMark + " is used up"}).Error() + "; scan snoozed", true},
		{(&psi.UnavailableError{What: "this workspace's scans wait", Reason: "an owner's daily budget of 7500 audits across all their workspaces " + psi.AccountQuotaMark + " is used up"}).Error() + "; scan snoozed", true},
	}
	for _, tt := range tests {
		if got := parkedForQuota(store.OverdueScan{LastError: tt.lastError}); got != tt.want {
			t.Errorf("parkedForQuota(%q) = %v, want %v", tt.lastError, got, tt.want)
		}
	}
}
