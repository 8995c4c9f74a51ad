// Package chrometest finds what the real-Chrome tests need, a Lighthouse CLI and Chromium, for
// the tests of scanner and of scanner/lighthouse alike. It imports nothing of the service, so
// package lighthouse's own tests can use it: they pass lighthouse.Home and
// lighthouse.InstallCommand in.
package chrometest

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Find answers a Lighthouse CLI and Chromium, or skips saying what is missing (under CI=true it
// fails instead): LIGHTHOUSE_CMD and CHROME_PATH when set, else where docs/local-lighthouse.md
// installs them (home, under the user's home directory; install is the command that does) and
// /usr/bin/chromium. Each of needs (such as python3) must be on the PATH too.
func Find(t testing.TB, home, install string, needs ...string) (cmd, chrome string) {
	t.Helper()
	cmd = os.Getenv("LIGHTHOUSE_CMD")
	if dir, err := os.UserHomeDir(); cmd == "" && err == nil {
		modules := filepath.Join(dir, home, "node_modules")
		node, cli := filepath.Join(modules, ".bin", "node"), filepath.Join(modules, "lighthouse", "cli", "index.js")
		if _, err := os.Stat(cli); err == nil {
			cmd = node + " " + cli
		}
	}
	chrome = cmp.Or(os.Getenv("CHROME_PATH"), "/usr/bin/chromium")
	if cmd == "" {
		Missing(t, "Lighthouse is not installed: "+install+" (docs/local-lighthouse.md)")
	}
	if _, err := exec.LookPath(strings.Fields(cmd)[0]); err != nil {
		Missing(t, fmt.Sprintf("Lighthouse command %q not runnable: %v", cmd, err))
	}
	if _, err := os.Stat(chrome); err != nil {
		Missing(t, fmt.Sprintf("Chromium not found at %s (sudo apt-get install chromium, or set CHROME_PATH)", chrome))
	}
	for _, n := range needs {
		if _, err := exec.LookPath(n); err != nil {
			Missing(t, n+" is needed and not on the PATH")
		}
	}
	return cmd, chrome
}

// Missing skips the test saying what it lacks; under CI=true, where .ci/run installs Chromium
// and Lighthouse, it fails instead, as a missing Postgres does: the real-Chrome tests are the
// only proof of what they test through Chromium, and must not vanish with a failed install
// (issue 37).
func Missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true: " + why)
	}
	t.Skip("skipped: " + why)
}
