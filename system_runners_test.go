package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// The runner role as an operator starts it: `sitepulse runner`, a process of this very binary,
// configured by its environment, audits a scan with its Lighthouse (here a stand-in CLI that
// prints a recorded report), then stops with a non-zero status at its next call once its token
// is revoked. A service URL that is plain http to anything but loopback is refused at start.
func TestSystemRunnerProcess(t *testing.T) {
	if runAsChild() {
		return
	}
	st := storetest.Postgres(t)
	rs := newRunnerService(t, st, 2*time.Minute)
	tok, secret := rs.token(t, st, rs.a.ID, "office")
	dir := t.TempDir()
	report := filepath.Join(dir, "report.json")
	if err := os.WriteFile(report, recordedLHR(t), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(dir, "lighthouse")
	if err := os.WriteFile(cli, []byte("#!/bin/sh\ncat "+report+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	scan := rs.scan(t, st)
	r := launchChild(t, "runner", map[string]string{"RUNNER_SERVICE_URL": rs.base, "RUNNER_TOKEN": secret, "RUNNER_NAME": "office",
		"RUNNER_LOCATION": "staging-lan", "RUNNER_CONCURRENCY": "2", "RUNNER_POLL_SECONDS": "1", "LIGHTHOUSE_CMD": cli}, "runner")
	var done store.Scan
	if !storetest.Eventually(func() bool {
		done, _ = st.Scan(context.Background(), rs.a.ID, scan.ID)
		return done.Status.Terminal()
	}) || done.Status != store.StatusComplete || done.PagesDone != 3 {
		t.Fatalf("scan %s (%s) %d/3:\nrunner:\n%s\nservice:\n%s", done.Status, done.Error, done.PagesDone, r.log, rs.logs)
	}
	results, _ := st.PageResults(context.Background(), rs.a.ID, scan.ID)
	for _, res := range results {
		if res.Location != "staging-lan" || res.BenchmarkIndex <= 0 {
			t.Errorf("%s: location %q, benchmark index %v", res.PagePath, res.Location, res.BenchmarkIndex)
		}
	}
	if err := st.RevokeRunnerToken(context.Background(), rs.a.ID, tok.ID, rs.clock.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.done:
		r.done <- err
		if err == nil || !strings.Contains(r.log.String(), "revoked or unknown") {
			t.Errorf("the revoked runner exited with %v:\n%s", err, r.log)
		}
	case <-time.After(storetest.Timeout()):
		t.Fatalf("the revoked runner kept running:\n%s", r.log)
	}

	// Plain http to another host is refused before the token is sent anywhere.
	bad := launchChild(t, "runner over http", map[string]string{"RUNNER_SERVICE_URL": "http://sitepulse.example.com", "RUNNER_TOKEN": secret}, "runner")
	select {
	case err := <-bad.done:
		bad.done <- err
		if err == nil || !strings.Contains(bad.log.String(), "https only") {
			t.Errorf("a runner pointed at plain http exited with %v:\n%s", err, bad.log)
		}
	case <-time.After(storetest.Timeout()):
		t.Fatal("a runner pointed at plain http kept running")
	}
}
