package notify

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReadmeVerifiesTheSignatureWithOpenssl runs the README's openssl lines on a signed event:
// a fresh delivery verifies; one signed six minutes ago, or with a changed body, does not.
func TestReadmeVerifiesTheSignatureWithOpenssl(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "<!-- verify-signature -->\n```sh\n")
	block, _, ok2 := strings.Cut(block, "```\n<!-- /verify-signature -->")
	if !ok || !ok2 {
		t.Fatal("README lacks the verify-signature block")
	}
	secret := []byte("whsec_3f9a0c1d")
	e := sample()[0]
	e.Site.Name = "Shop 'quoted' $(not run) \\ é"
	for _, c := range []struct {
		name   string
		signed time.Time
		tamper bool
		want   string
	}{
		{"a fresh delivery", time.Now(), false, "verified"},
		{"a delivery signed six minutes ago", time.Now().Add(-6 * time.Minute), false, "rejected"},
		{"a changed body", time.Now(), true, "rejected"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body, h, err := Render(KindWebhook, e, secret, c.signed)
			if err != nil {
				t.Fatal(err)
			}
			if c.tamper {
				body = []byte(strings.Replace(string(body), "Shop", "Sh0p", 1))
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "body.json"), body, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("sh", "-c", block)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "SIG="+h.Get("X-SitePulse-Signature"), "SECRET="+string(secret))
			out, err := cmd.CombinedOutput()
			if got := strings.TrimSpace(string(out)); err != nil || got != c.want {
				t.Errorf("README lines said %q (err %v), want %q", got, err, c.want)
			}
		})
	}
}
