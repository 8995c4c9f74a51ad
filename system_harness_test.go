// The system tests (system_*_test.go, TestSystem*) run SitePulse as a user runs it: real
// processes of this very binary through run(), on real Postgres, against the PSI double, killed,
// restarted and cut off from their database. This file is their harness.

package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store/storetest"
)

// childEnv marks a re-executed test binary that is to be the real program, not a test.
const childEnv = "SITEPULSE_CHILD"

// runAsChild is the first line of a test that starts real SitePulse processes with startChild:
// in such a process it runs the program until SIGTERM (or SIGKILL) and reports true, and the
// test returns at once.
func runAsChild() bool {
	if os.Getenv(childEnv) != "1" {
		return false
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// The arguments after the test binary's "--" are the program's (`check ...`).
	if err := run(ctx, flag.Args(), os.Getenv, os.Stdout); err != nil {
		stop()
		os.Exit(exitStatus(err, os.Stderr))
	}
	return true
}

// child is a real SitePulse process: the test binary re-executed into run() by runAsChild.
type child struct {
	name string
	cmd  *exec.Cmd
	base string
	log  *scantest.LogBuffer
	done chan error
}

// startChild re-executes the test binary running only t's test, which must begin with
// runAsChild, with env added to the environment, and waits for /healthz. The process is
// killed when the test ends if it is still running.
func startChild(t *testing.T, name string, env map[string]string, args ...string) *child {
	t.Helper()
	c := launchChild(t, name, env, args...)
	c.waitHealthy(t)
	return c
}

// launchChild starts a child as startChild does, with args for the program (such as -demo),
// without waiting for it: processes started together.
func launchChild(t *testing.T, name string, env map[string]string, args ...string) *child {
	t.Helper()
	if env == nil {
		env = map[string]string{}
	}
	if _, ok := env["DATABASE_URL"]; !ok && os.Getenv("DATABASE_URL") != "" {
		// A child never runs on the tests' own database (it inherits the environment): a
		// schema of its own, dropped after the child is stopped.
		env["DATABASE_URL"] = storetest.SchemaDSN(t)
	}
	addr := freeAddr(t)
	c := &child{name: name, base: "http://" + addr, log: &scantest.LogBuffer{}, done: make(chan error, 1)}
	c.cmd = exec.Command(os.Args[0], append([]string{"-test.run=^" + regexp.QuoteMeta(t.Name()) + "$", "--"}, args...)...)
	c.cmd.Env = append(os.Environ(), childEnv+"=1", "ADDR="+addr, "BASE_URL="+c.base,
		"DATABASE_MAX_CONNS="+strconv.Itoa(storetest.ChildMaxConns)) // env may raise it
	withDirect(env)
	for k, v := range env {
		c.cmd.Env = append(c.cmd.Env, k+"="+v)
	}
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() { c.kill() })
	return c
}

// waitHealthy waits for the child's /healthz, and fails the test if it exits first.
func (c *child) waitHealthy(t *testing.T) {
	t.Helper()
	exited := false
	healthy := storetest.Eventually(func() bool {
		select {
		case err := <-c.done:
			c.done <- err
			exited = true
			return true
		default:
		}
		resp, err := http.Get(c.base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if !healthy || exited {
		t.Fatalf("%s was not healthy (exited: %v):\n%s", c.name, exited, c.log)
	}
}

// kill sends SIGKILL, no shutdown and no lease released, and waits for the process to go.
func (c *child) kill() {
	c.cmd.Process.Kill()
	err := <-c.done
	c.done <- err
}

// stop sends SIGTERM and waits for the graceful shutdown.
func (c *child) stop(t *testing.T) {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		c.done <- err
		if err != nil {
			t.Errorf("%s: exit after SIGTERM: %v\n%s", c.name, err, c.log)
		}
	case <-time.After(storetest.Timeout()):
		t.Errorf("%s did not exit %s after SIGTERM", c.name, storetest.Timeout())
		c.kill()
	}
}

// scanLogLine matches the log lines that begin and end one attempt of a scan on a worker.
var scanLogLine = regexp.MustCompile(`msg="(scan started|scan complete|scan failed|scanner: [^"]*)".* scan=(\S+)`)

// scanLog is what a process's log says about its scans.
type scanLog struct {
	started, completed map[string]int // scan id -> lines
	maxAtOnce          int            // most scans between "scan started" and their end at once
}

// readScanLog reads a process's log in order. Lines are written whole and in the order the
// events happened, and "scan started" is logged after a worker claimed the job and its end
// before the worker takes another, so the running count is a lower bound of the worker
// slots busy at that moment: it can never exceed SCAN_WORKERS if the pool is right.
func readScanLog(log string) scanLog {
	l := scanLog{started: map[string]int{}, completed: map[string]int{}}
	running := map[string]bool{}
	for _, line := range strings.Split(log, "\n") {
		m := scanLogLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		switch msg, id := m[1], m[2]; {
		case msg == "scan started":
			l.started[id]++
			running[id] = true
			l.maxAtOnce = max(l.maxAtOnce, len(running))
		case msg == "scan complete":
			l.completed[id]++
			delete(running, id)
		case strings.HasSuffix(msg, "scan failed") || strings.Contains(msg, "retrying") || strings.Contains(msg, "lease lost") ||
			strings.Contains(msg, "released") || strings.Contains(msg, "snoozed") || strings.Contains(msg, "could not"):
			delete(running, id)
		}
	}
	return l
}

// publish posts a signed site_publish event for platformID to base.
func publish(base, secret, platformID string) (int, error) {
	body := `{"siteId":"` + platformID + `"}`
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	req, err := http.NewRequest(http.MethodPost, base+"/api/webhooks/platform", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-platform-signature", hex.EncodeToString(m.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// readScanLog's count follows the pool's own log lines, whatever ends an attempt.
func TestReadScanLog(t *testing.T) {
	tests := []struct {
		name      string
		log       string
		maxAtOnce int
		completed int
	}{
		{"sequential", `msg="scan started" worker=1 job=j scan=a site=S
msg="page done" worker=1 job=j scan=a site=S page=/
msg="scan complete" worker=1 job=j scan=a site=S results=10
msg="scan started" worker=1 job=k scan=b site=S`, 1, 1},
		{"overlapping", `msg="scan started" worker=1 job=j scan=a
msg="scan started" worker=2 job=k scan=b
msg="scan started" worker=3 job=l scan=c
msg="scan complete" worker=2 job=k scan=b
msg="scan started" worker=2 job=m scan=d`, 3, 1},
		{"failed attempts end too", `msg="scan started" worker=1 job=j scan=a
msg="scanner: attempt failed; retrying" worker=1 job=j scan=a attempt=1
msg="scan started" worker=1 job=j scan=b
msg="scanner: lease lost; the job belongs to another worker now" worker=1 scan=b
msg="scan started" worker=1 job=j scan=c
msg="scanner: scan failed" worker=1 scan=c reason="gave up"
msg="scan started" worker=1 job=j scan=d
msg="scan failed" worker=1 scan=d reason=x
msg="scan started" worker=1 job=j scan=e`, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range 2 { // with and without slog's time= prefix
				log := tt.log
				if i == 1 {
					log = "time=2026-11-23T10:00:00.000Z level=INFO " + strings.ReplaceAll(log, "\n", "\ntime=2026-11-23T10:00:00.000Z level=INFO ")
				}
				l := readScanLog(log)
				if l.maxAtOnce != tt.maxAtOnce || len(l.completed) != tt.completed {
					t.Errorf("max at once %d, completed %d; want %d, %d", l.maxAtOnce, len(l.completed), tt.maxAtOnce, tt.completed)
				}
			}
		})
	}
}
