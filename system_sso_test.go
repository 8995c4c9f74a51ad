package main

import (
	"bufio"
	"cmp"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestSSORealProviderInChromium signs a person in end to end through a real OpenID provider:
// the zitadel/oidc example provider (.ci/oidc-provider, a module of its own, built here with go
// build), on 127.0.0.1, and headless Chromium driven by .ci/sso-browser.mjs over the DevTools
// protocol: SitePulse's login page, the provider's login form with its test user, and back,
// signed in. The provider's addresses go through the outbound guard, which SCAN_ALLOW_PRIVATE
// opens to loopback for this test. It skips when the provider cannot be built or Chromium or
// Node 22 is missing; under CI=true it fails instead.
func TestSSORealProviderInChromium(t *testing.T) {
	missing := func(why string) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: " + why)
		}
		t.Skip("skipped: " + why)
	}
	chromium := cmp.Or(os.Getenv("CHROME_PATH"), "/usr/bin/chromium")
	if _, err := os.Stat(chromium); err != nil {
		missing("Chromium not found at " + chromium + " (sudo apt-get install chromium, or set CHROME_PATH)")
	}
	node := os.Getenv("SSO_NODE")
	if home, err := os.UserHomeDir(); node == "" && err == nil {
		node = filepath.Join(home, ".sitepulse", "lighthouse", "node_modules", ".bin", "node") // Node 22, installed with Lighthouse
	}
	if out, err := exec.Command(node, "-e", "process.exit(typeof WebSocket === 'function' ? 0 : 1)").CombinedOutput(); err != nil {
		missing("Node 22 (with WebSocket) not runnable at " + node + ": " + strings.TrimSpace(string(out)) + " (docs/local-lighthouse.md installs it)")
	}
	bin := filepath.Join(t.TempDir(), "oidc-provider")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join(".ci", "oidc-provider")
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		missing("the OpenID provider (.ci/oidc-provider) did not build: " + strings.TrimSpace(string(out)))
	}

	spAddr, idpAddr := freeAddr(t), freeAddr(t)
	issuer := "http://" + idpAddr + "/"
	secret, _ := store.NewSecret("")
	idp := exec.Command(bin)
	idp.Env = append(os.Environ(), "ADDR="+idpAddr, "CLIENT_ID=sitepulse", "CLIENT_SECRET="+secret,
		"REDIRECT_URI=http://"+spAddr+"/login/sso/callback")
	stdout, _ := idp.StdoutPipe()
	idpLog := &scantest.LogBuffer{}
	idp.Stderr = idpLog
	if err := idp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idp.Process.Kill(); idp.Wait() })
	up := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "listening ") {
				up <- true
			}
		}
	}()
	select {
	case <-up:
	case <-time.After(storetest.Timeout()):
		t.Fatalf("the provider did not start: %s", idpLog)
	}

	env := map[string]string{"ADDR": spAddr, "BASE_URL": "http://" + spAddr, "OIDC_ISSUER": issuer, "OIDC_CLIENT_ID": "sitepulse",
		"OIDC_CLIENT_SECRET": secret, "OIDC_NAME": "Zitadel test provider", "SCAN_ALLOW_PRIVATE": "true"}
	base, logs, stop := startRun(t, env)
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), 2*storetest.Timeout())
	defer cancel()
	script := exec.CommandContext(ctx, node, filepath.Join(".ci", "sso-browser.mjs"))
	script.Env = append(os.Environ(), "BASE_URL="+base, "ISSUER="+issuer, "USERNAME=test-user@127.0.0.1", "PASSWORD=verysecure",
		"CHROMIUM="+chromium, "SHOTS="+os.Getenv("SSO_SHOTS"))
	out, err := script.CombinedOutput()
	t.Logf("browser:\n%s", out)
	if err != nil || strings.Contains(string(out), "FAIL") {
		t.Fatalf("the sign-in through the real provider failed (%v)\nSitePulse's log:\n%s\nthe provider's log:\n%s", err, logs, idpLog)
	}
	if !strings.Contains(logs.String(), "sso event") || !strings.Contains(logs.String(), "kind=sso.signin ") {
		t.Errorf("no sso.signin event in the log:\n%s", logs)
	}
}
