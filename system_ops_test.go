package main

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sitepulse/store/storetest"
)

// scrape reads /metrics from base with the bearer token.
func scrape(t *testing.T, base, token string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

func status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

var inFlightLine = regexp.MustCompile(`(?m)^sitepulse_http_requests_in_flight (\d+)$`)

// SIGTERM while a request is in flight: the process answers /readyz 503 (and /healthz 200)
// while that request goes on, the request then gets its whole answer, and the process exits
// cleanly. The request in flight is a publish webhook whose body is still being sent.
func TestSystemReadinessDrainsOnSIGTERM(t *testing.T) {
	if runAsChild() {
		return
	}
	const secret, token = "whsec_drain", "metrics-drain"
	p := startChild(t, "drainer", map[string]string{"PLATFORM_CLIENT_SECRET": secret, "METRICS_TOKEN": token})
	if got := status(p.base + "/readyz"); got != http.StatusOK {
		t.Fatalf("/readyz before SIGTERM: %d", got)
	}

	body := `{"siteId":"plat-none"}`
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/webhooks/platform HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-platform-signature: %s\r\nContent-Length: %d\r\n\r\n%s",
		hex.EncodeToString(m.Sum(nil)), len(body), body[:5])
	// In flight: the scrape counts itself and the webhook.
	if !storetest.Eventually(func() bool {
		mm := inFlightLine.FindStringSubmatch(scrape(t, p.base, token))
		n, _ := strconv.Atoi(mm[1])
		return n >= 2
	}) {
		t.Fatal("the webhook never showed in flight")
	}

	p.cmd.Process.Signal(syscall.SIGTERM)
	if !storetest.Eventually(func() bool { return status(p.base+"/readyz") == http.StatusServiceUnavailable }) {
		t.Fatalf("/readyz never answered 503 while draining:\n%s", p.log)
	}
	if got := status(p.base + "/healthz"); got != http.StatusOK {
		t.Errorf("/healthz while draining: %d, want 200 (alive)", got)
	}
	select {
	case err := <-p.done:
		p.done <- err
		t.Fatalf("the process exited with a request in flight: %v", err)
	default:
	}

	io.WriteString(conn, body[5:])
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the request in flight got no answer: %v\n%s", err, p.log)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		t.Errorf("the request in flight: %d", resp.StatusCode)
	}
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, p.log)
		}
	case <-time.After(storetest.Timeout()):
		t.Fatalf("no exit after the drain:\n%s", p.log)
	}
	for _, want := range []string{"shutting down: draining HTTP requests", "HTTP server stopped", "store closed"} {
		if !strings.Contains(p.log.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

// A real scrape of METRICS_ADDR from a process on Postgres that scanned a site passes
// `promtool check metrics` (Debian's prometheus package), and carries the families of the
// queue, the scans, the audits, PSI and the database pool with samples. Without promtool it
// skips, except under CI=true.
func TestSystemMetricsPassPromtool(t *testing.T) {
	if runAsChild() {
		return
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is missing (apt-get install prometheus); CI=true needs it")
		}
		t.Skip("promtool is missing (apt-get install prometheus)")
	}
	r := newScaleRig(t, 1, 1, map[string]string{"METRICS_ADDR": "127.0.0.1:0"})
	r.publishAll(t)
	r.waitEnded(t)
	p := r.procs[0]
	m := regexp.MustCompile(`msg="metrics listening" addr=(\S+)`).FindStringSubmatch(p.log.String())
	if m == nil {
		t.Fatalf("no metrics listener in the log:\n%s", p.log)
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s\nscrape:\n%s", err, out, body)
	}
	for _, want := range []string{`sitepulse_scans_total{outcome="completed"} 1`, `sitepulse_audits_total{outcome="ok"} 10`,
		`sitepulse_psi_breaker_state{state="closed"} 1`, `sitepulse_db_connections{state="in_use"}`, `sitepulse_info{role="all",version="` + version() + `"} 1`,
		`sitepulse_http_requests_total{route="POST /api/webhooks/platform",code="200"} 1`, "go_goroutines ",
		`sitepulse_jobs{kind="digest",state="running"} `, `sitepulse_jobs{kind="delivery",state="available"} `} { // every kind the pool runs, 0 or not

		if !strings.Contains(string(body), want) {
			t.Errorf("scrape lacks %q:\n%s", want, body)
		}
	}
	t.Logf("promtool check metrics passed a %d-byte scrape of %d lines", len(body), bytes.Count(body, []byte("\n")))
}
