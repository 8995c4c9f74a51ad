package scanner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
	"sitepulse/store/storetest"
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

// storeTest is one test of the pipeline on a store.
type storeTest struct {
	name string
	fn   func(t *testing.T, st store.Store)
	// realIO marks a test that talks to a real socket (an SMTP double), which cannot live in
	// a synctest bubble: it runs on real time on both stores.
	realIO bool
}

// onStores runs each test, in parallel, on every store: on the memory store inside a
// testing/synctest bubble, where the pool's timers and tickers, its leases, the limiter, the
// capacity, the breaker and the fake PSI's delays all run on fake time, so nothing depends on
// the machine's speed; on Postgres, whose connections cannot live in a bubble, on real time,
// each wait bounded by storetest.Timeout.
func onStores(t *testing.T, tests ...storeTest) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel()
					if b.Name == "memory" && !tt.realIO {
						synctest.Test(t, func(t *testing.T) { tt.fn(t, b.Open(t)) })
						return
					}
					tt.fn(t, b.Open(t))
				})
			}
		})
	}
}
