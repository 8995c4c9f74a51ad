package scanner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
)

// Copies of helpers whose originals now live in the tests of scanner/psi and
// scanner/lighthouse, which this package's tests cannot see.

// testKey is the PSI key of the psi tests.
const testKey = "AIzaSECRET-key_123"

func quotaUser(t *testing.T, st store.Store, name string) string {
	t.Helper()
	u := store.User{ID: store.NewID(), Email: name + "-" + store.NewID()[:8] + "@example.com", PasswordHash: "x", CreatedAt: time.Now()}
	if err := st.CreateUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u.ID
}

// fixture reads a real PSI response from testdata/psi.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "psi", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func extractAll(t *testing.T, names ...string) []store.PageResult {
	t.Helper()
	var out []store.PageResult
	for _, n := range names {
		r, err := lighthouse.ExtractPSI(fixture(t, n))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

var allFixtures = []string{"home.mobile.json", "home.desktop.json", "blog.mobile.json", "blog.desktop.json", "pricing.mobile.json",
	"pricing.desktop.json", "about.mobile.json", "about.desktop.json", "fast.mobile.json", "fast.desktop.json"}
