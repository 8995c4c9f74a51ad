package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
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

// realSSO is a real OpenID provider (the zitadel/oidc example, .ci/oidc-provider) listening on
// 127.0.0.1 for a SitePulse at spAddr, and the Chromium and Node that drive .ci/sso-browser.mjs.
type realSSO struct {
	spAddr, issuer, clientID, secret string
	chromium, node                   string
	log                              *scantest.LogBuffer
}

// startRealSSO builds and starts the provider with one client, clientID, whose redirect URI is
// SitePulse's callback at a fresh address. It skips when the provider cannot be built or
// Chromium or Node 22 is missing; under CI=true it fails instead.
func startRealSSO(t *testing.T, clientID string) *realSSO {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: " + why)
		}
		t.Skip("skipped: " + why)
	}
	r := &realSSO{clientID: clientID, chromium: cmp.Or(os.Getenv("CHROME_PATH"), "/usr/bin/chromium"), node: os.Getenv("SSO_NODE")}
	if _, err := os.Stat(r.chromium); err != nil {
		missing("Chromium not found at " + r.chromium + " (sudo apt-get install chromium, or set CHROME_PATH)")
	}
	if home, err := os.UserHomeDir(); r.node == "" && err == nil {
		r.node = filepath.Join(home, ".sitepulse", "lighthouse", "node_modules", ".bin", "node") // Node 22, installed with Lighthouse
	}
	if out, err := exec.Command(r.node, "-e", "process.exit(typeof WebSocket === 'function' ? 0 : 1)").CombinedOutput(); err != nil {
		missing("Node 22 (with WebSocket) not runnable at " + r.node + ": " + strings.TrimSpace(string(out)) + " (docs/local-lighthouse.md installs it)")
	}
	bin := filepath.Join(t.TempDir(), "oidc-provider")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join(".ci", "oidc-provider")
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		missing("the OpenID provider (.ci/oidc-provider) did not build: " + strings.TrimSpace(string(out)))
	}

	idpAddr := freeAddr(t)
	r.spAddr, r.issuer = freeAddr(t), "http://"+idpAddr+"/"
	r.secret, _ = store.NewSecret("")
	idp := exec.Command(bin)
	idp.Env = append(os.Environ(), "ADDR="+idpAddr, "CLIENT_ID="+clientID, "CLIENT_SECRET="+r.secret,
		"REDIRECT_URI=http://"+r.spAddr+"/login/sso/callback")
	stdout, _ := idp.StdoutPipe()
	r.log = &scantest.LogBuffer{}
	idp.Stderr = r.log
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
		t.Fatalf("the provider did not start: %s", r.log)
	}
	return r
}

// browse runs .ci/sso-browser.mjs against SitePulse at base with env, and fails the test on
// a FAIL line.
func (r *realSSO) browse(t *testing.T, base string, logs *scantest.LogBuffer, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*storetest.Timeout())
	defer cancel()
	script := exec.CommandContext(ctx, r.node, filepath.Join(".ci", "sso-browser.mjs"))
	script.Env = append(os.Environ(), append([]string{"BASE_URL=" + base, "ISSUER=" + r.issuer, "USERNAME=test-user@127.0.0.1",
		"PASSWORD=verysecure", "CHROMIUM=" + r.chromium, "SHOTS=" + os.Getenv("SSO_SHOTS")}, env...)...)
	out, err := script.CombinedOutput()
	t.Logf("browser:\n%s", out)
	if err != nil || strings.Contains(string(out), "FAIL") {
		t.Fatalf("the sign-in through the real provider failed (%v)\nSitePulse's log:\n%s\nthe provider's log:\n%s", err, logs, r.log)
	}
}

// TestSSORealProviderInChromium signs a person in end to end through a real OpenID provider,
// the operator's (OIDC_ISSUER): the zitadel/oidc example provider (.ci/oidc-provider, a module
// of its own, built here with go build), on 127.0.0.1, and headless Chromium driven by
// .ci/sso-browser.mjs over the DevTools protocol: SitePulse's login page, the provider's login
// form with its test user, and back, signed in. The provider's addresses go through the
// outbound guard, which SCAN_ALLOW_PRIVATE opens to loopback for this test.
func TestSSORealProviderInChromium(t *testing.T) {
	idp := startRealSSO(t, "sitepulse")
	env := map[string]string{"ADDR": idp.spAddr, "BASE_URL": "http://" + idp.spAddr, "OIDC_ISSUER": idp.issuer, "OIDC_CLIENT_ID": idp.clientID,
		"OIDC_CLIENT_SECRET": idp.secret, "OIDC_NAME": "Zitadel test provider", "SCAN_ALLOW_PRIVATE": "true"}
	base, logs, stop := startRun(t, env)
	defer stop()
	idp.browse(t, base, logs, "MODE=operator")
	if !strings.Contains(logs.String(), "sso event") || !strings.Contains(logs.String(), "kind=sso.signin ") {
		t.Errorf("no sso.signin event in the log:\n%s", logs)
	}
}

// TestSSOWorkspaceProviderInChromium runs a workspace's own provider in a real browser on a
// server with no provider of its own (no OIDC_ISSUER), on Postgres: the owner of a workspace
// that verified zitadel.ch (the example provider's users' domain; seeded, as no test can answer
// for a real domain's DNS) registers the real provider as the workspace's on its settings page,
// is refused the requirement from her password session, signs in through the provider by her
// work e-mail on the login page, and requires single sign-on with just-in-time viewers; a
// newcomer of the domain signs in by their work e-mail and joins as a viewer; the owner's
// password session is then refused the workspace.
func TestSSOWorkspaceProviderInChromium(t *testing.T) {
	idp := startRealSSO(t, "sitepulse-workspace")
	st, dsn := storetest.PostgresDSN(t)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	const ownerPassword = "a fine owner password"
	hash, err := store.HashPassword(ownerPassword, 1000)
	if err != nil {
		t.Fatal(err)
	}
	owner := store.User{ID: store.NewID(), Email: "test-user@zitadel.ch", PasswordHash: hash, CreatedAt: time.Now()}
	must(st.CreateUser(ctx, owner))
	ws := store.Workspace{ID: store.NewID(), Name: "Zitadel team", CreatedAt: time.Now()}
	must(st.CreateWorkspace(ctx, ws, owner.ID, 10))
	verified := time.Now()
	must(st.SetWorkspaceSSO(ctx, owner.ID, store.WorkspaceSSO{WorkspaceID: ws.ID, Domain: "zitadel.ch", Token: "seeded", VerifiedAt: &verified, UpdatedAt: verified}))

	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	env := map[string]string{"ADDR": idp.spAddr, "BASE_URL": "http://" + idp.spAddr, "DATABASE_URL": dsn, "PLATFORM_TOKEN_KEY": key, "SCAN_ALLOW_PRIVATE": "true"}
	base, logs, stop := startRun(t, env)
	defer stop()
	idp.browse(t, base, logs, "MODE=workspace", "WORKSPACE="+ws.ID, "OWNER_EMAIL="+owner.Email, "OWNER_PASSWORD="+ownerPassword,
		"CLIENT_ID="+idp.clientID, "CLIENT_SECRET="+idp.secret, "WORK_EMAIL=test-user@zitadel.ch",
		"NEWCOMER_EMAIL=test-user2@zitadel.ch", "NEWCOMER_USERNAME=test-user2")

	p, err := st.WorkspaceProviderOf(ctx, ws.ID)
	if err != nil || p.Issuer != idp.issuer || p.ClientID != idp.clientID || strings.Contains(p.SecretSealed, idp.secret) {
		t.Fatalf("the workspace's provider as stored: %+v %v", p, err)
	}
	if rule, err := st.SSORule(ctx, ws.ID); err != nil || rule.RequiredAt == nil || rule.JITRole != store.RoleViewer {
		t.Fatalf("the workspace's rule: %+v %v", rule, err)
	}
	if id, err := st.Identity(ctx, idp.issuer, "id1"); err != nil || id.UserID != owner.ID {
		t.Errorf("the owner's identity at the workspace's provider: %+v %v", id, err)
	}
	newcomer, err := st.UserByEmail(ctx, "test-user2@zitadel.ch")
	must(err)
	if w, err := st.Workspace(ctx, newcomer.ID, ws.ID); err != nil || w.Role != store.RoleViewer {
		t.Errorf("the newcomer joined as %q (%v), want viewer", w.Role, err)
	}
	for _, want := range []string{"kind=sso.signin ", "kind=sso.identity_linked ", "kind=sso.jit_join ", "kind=sso.credential_refused ", "provider set"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no %q in the log:\n%s", want, logs)
		}
	}
	if strings.Contains(logs.String(), idp.secret) {
		t.Error("the provider's client secret is in the log")
	}
}
