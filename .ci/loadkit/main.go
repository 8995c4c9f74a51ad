// Command loadkit is the Go half of .ci/load.sh: it seeds a load-test database through package
// store, writes the signed webhook bodies wrk replays (wrk's Lua has no HMAC), serves a PageSpeed
// Insights double so queued scans never reach the network, and counts the scans afterwards.
//
//	go run ./.ci/loadkit seed   -sites 100            # demo account + 100 connected sites; prints shell exports
//	go run ./.ci/loadkit bodies -sites 100 -n 1000 -secret S -out FILE
//	go run ./.ci/loadkit psi    -addr 127.0.0.1:8791 -delay 200ms
//	go run ./.ci/loadkit count  -want 100 -timeout 5m # waits for the load sites' scans to end
//	go run ./.ci/loadkit platform -addr 127.0.0.1:8792 -client-id ID -secret S # the platform double
//	go run ./.ci/loadkit year -sites 50 -pages 50 -days 365 -retention 90 # a seeded year before and after retention
//	go run ./.ci/loadkit ingest -c 16 -d 5s    # results extracted and stored with explain data and pictures, per second
//	go run ./.ci/loadkit hello -addr 127.0.0.1:8793 # a bare net/http hello
//	go run ./.ci/loadkit fleet -sites 2000 -pages 20 -days 365 -detail-days 62 -out FILE # the size it is for; times the partition migration
//	go run ./.ci/loadkit drop-month -retention 30 # the pruner's month drop on the fleet database, with the sizes before and after
//
// seed and count read DATABASE_URL. It lives under .ci/ (not part of ./...) because it is an
// operations tool, not part of the service.
package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sitepulse/scanner/demo"
	"sitepulse/scanner/platform/platformtest"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/postgres"
)

// platformID names load site i; the webhook bodies use the same names.
func platformID(i int) string { return fmt.Sprintf("load-site-%03d", i) }

// usage lists the commands: what `loadkit -h` prints.
const usage = `usage: loadkit COMMAND [flags]

commands:
  seed     -sites 100                                    demo account + the load sites (reads DATABASE_URL); prints shell exports
  bodies   -sites 100 -n 1000 -secret S -out FILE        signed webhook bodies for wrk (-secret defaults to PLATFORM_CLIENT_SECRET)
  psi      -addr 127.0.0.1:8791 -delay 1s                the PageSpeed Insights double (-fixtures testdata/psi)
  count    -want 100 -timeout 5m                         waits for the load sites' scans to end (reads DATABASE_URL)
  platform -addr 127.0.0.1:8792 -client-id ID -secret S  the Webflow double
  year     -sites 50 -pages 50 -days 365 -retention 90   a year of daily scans, its size before and after retention (fresh DATABASE_URL);
           [-explain]                                    with what explains each result and its screenshots (issue 33)
  ingest   -c 16 -d 5s -warmup 2s                        real PSI answers extracted and stored with explain data and pictures, for a time (after a warm-up not counted); prints results/s
  hello    -addr 127.0.0.1:8793                          a bare net/http hello (the composed floor's Go half)
  fleet    -sites 2000 -pages 20 -days 365 -detail-days 62 -out FILE
                                                         a year of daily scans of sites sites at schema 38, the last detail-days
                                                         with their page details; times the migration to month partitions (issue 46)
  fresh    -n 1000 -base http://127.0.0.1:8080           renames LOAD_SITE with its own connection, then asks the running service's budget check
                                                         at once: how many first answers were stale, the longest wait (issue 46)
  drop-month -retention 30                               the pruner's month drop on the fleet database, sizes before and after

loadkit COMMAND -h lists every flag.
`

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return errors.New("no command")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	ctx := context.Background()
	fs := flag.NewFlagSet("loadkit "+args[0], flag.ContinueOnError)
	fs.SetOutput(stdout)
	sites := fs.Int("sites", 100, "number of load sites")
	n := fs.Int("n", 1000, "bodies: number of signed publishes; fresh: number of renames")
	base := fs.String("base", "http://127.0.0.1:8080", "fresh: the running service")
	secret := fs.String("secret", os.Getenv("PLATFORM_CLIENT_SECRET"), "bodies: webhook secret")
	out := fs.String("out", "", "bodies: output file")
	addr := fs.String("addr", "127.0.0.1:8791", "psi: listen address")
	delay := fs.Duration("delay", time.Second, "psi: time each audit takes")
	fixtures := fs.String("fixtures", "testdata/psi", "psi: directory of PSI responses")
	want := fs.Int("want", 100, "count: expected number of scans")
	timeout := fs.Duration("timeout", 5*time.Minute, "count: how long to wait for scans to end")
	clientID := fs.String("client-id", os.Getenv("PLATFORM_CLIENT_ID"), "platform: the app's client id")
	pages := fs.Int("pages", 50, "year: pages per site")
	days := fs.Int("days", 365, "year: days of daily scans")
	retention := fs.Int("retention", 90, "year: the retention applied, in days")
	workers := fs.Int("c", 16, "ingest: concurrent workers")
	duration := fs.Duration("d", 5*time.Second, "ingest: how long to store results")
	warmup := fs.Duration("warmup", 0, "ingest: how long to store results first, not counted")
	detailDays := fs.Int("detail-days", 62, "fleet: the last days whose scans keep their page details")
	explain := fs.Bool("explain", false, "year: every result also keeps what explains it and its screenshots (issue 33), as the pipeline writes them")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}

	switch args[0] {
	case "seed":
		return seed(ctx, *sites)
	case "bodies":
		return bodies(*sites, *n, *secret, *out)
	case "psi":
		return psiDouble(*addr, *fixtures, *delay)
	case "count":
		return count(ctx, *want, *timeout)
	case "platform":
		return platformDouble(*addr, *clientID, *secret)
	case "year":
		return year(ctx, stdout, *fixtures, *sites, *pages, *days, *retention, *explain)
	case "ingest":
		return ingest(ctx, stdout, *fixtures, *workers, *warmup, *duration)
	case "hello":
		return hello(*addr)
	case "fleet":
		return fleet(ctx, stdout, *fixtures, *sites, *pages, *days, *detailDays, *out)
	case "fresh":
		return fresh(ctx, stdout, *base, *n)
	case "drop-month":
		return dropMonth(ctx, stdout, *retention)
	}
	fmt.Fprint(stdout, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

func open(ctx context.Context) (*postgres.Store, error) {
	dsn := os.Getenv("DATABASE_URL")
	if dsn == "" {
		return nil, errors.New("DATABASE_URL is not set")
	}
	return postgres.Open(ctx, dsn, postgres.Pool{})
}

// seed creates the demo account (its site has two completed scans from the real fixtures, for
// budget-check, MCP and the UI), a session for the UI, and the load sites, each connected to the
// platform with one saved page so a scan audits two pairs and fetches no sitemap.
func seed(ctx context.Context, sites int) error {
	st, err := open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()
	d, err := demo.Seed(ctx, st, demo.Fixtures{FS: os.DirFS("."), Before: "testdata/psi-before", Latest: "testdata/psi"},
		now, store.PasswordIterations)
	if err != nil {
		return err
	}
	u, err := st.UserByEmail(ctx, d.Email)
	if err != nil {
		return err
	}
	token, hash := store.NewSecret("")
	csrf, _ := store.NewSecret("")
	if err := st.CreateSession(ctx, store.Session{TokenHash: hash, UserID: u.ID, CSRF: csrf, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}); err != nil {
		return err
	}
	for i := 0; i < sites; i++ {
		s := store.Site{ID: store.NewID(), UserID: u.ID, Name: fmt.Sprintf("Load %03d", i), Domain: fmt.Sprintf("load-%03d.sitepulse.test", i),
			PlatformSiteID: platformID(i), Pages: []string{"/"}, CreatedAt: now}
		if err := st.CreateSite(ctx, s); err != nil && !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("site %d: %w", i, err)
		}
	}
	fmt.Printf("LOAD_KEY=%s\nLOAD_SITE=%s\nLOAD_SCAN=%s\nLOAD_COOKIE='session=%s'\n", d.APIKey, d.SiteID, d.LatestScanID, token)
	return nil
}

// bodies writes n lines "<hex HMAC-SHA256> <body>": n/sites publishes of each load site, one site
// after another, so a site's publishes arrive together and race for its one scan; each body is
// distinct (publishedOn and _id vary) so the webhook's replay guard lets every one through.
func bodies(sites, n int, secret, out string) error {
	if secret == "" || out == "" {
		return errors.New("bodies needs -secret (or PLATFORM_CLIENT_SECRET) and -out")
	}
	var b strings.Builder
	base := time.Now().UTC().Truncate(time.Second)
	for i := 0; i < n; i++ {
		body := fmt.Sprintf(`{"_id":"pub-%05d","siteId":"%s","publishedBy":"load","publishedOn":"%s","domains":["load.sitepulse.test"]}`,
			i, platformID(i*sites/n), base.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano))
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(body))
		fmt.Fprintf(&b, "%s %s\n", hex.EncodeToString(mac.Sum(nil)), body)
	}
	return os.WriteFile(out, []byte(b.String()), 0o600)
}

// psiDouble answers runPagespeed with the real fixture of the asked page and strategy (the
// tests' scantest double), after delay, so scans take a realistic-ish time without any network.
// Without fixtures it refuses to start, saying where it looked: started from another directory
// it would otherwise answer every audit with a 404 (issue 37).
func psiDouble(addr, dir string, delay time.Duration) error {
	n, err := psiFixtures(dir)
	if err != nil {
		return err
	}
	log.Printf("psi double on %s (delay %s), answering from %d fixtures in %s", addr, delay, n, dir)
	return http.ListenAndServe(addr, scantest.Handler(dir, delay))
}

// psiFixtures counts the PSI responses in dir, or says where it looked and how to point it at them.
func psiFixtures(dir string) (int, error) {
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(names) > 0 {
		return len(names), nil
	}
	abs, _ := filepath.Abs(dir)
	return 0, fmt.Errorf("psi: no PSI fixtures (*.json) in %s: run it from the repository's root (go run ./.ci/loadkit psi), "+
		"or point -fixtures at the repository's testdata/psi (e.g. -fixtures /path/to/sitepulse/testdata/psi)", abs)
}

// platformDouble serves the platform double (package platformtest) with its sample sites, for
// trying the connect flow offline: PLATFORM_AUTHORIZE_URL=http://ADDR/oauth/authorize and
// PLATFORM_API_URL=http://ADDR; POST http://ADDR/_double/publish/{site_id} publishes a site.
func platformDouble(addr, clientID, secret string) error {
	if clientID == "" || secret == "" {
		return errors.New("platform: -client-id and -secret (or PLATFORM_CLIENT_ID and PLATFORM_CLIENT_SECRET) are required")
	}
	p := platformtest.NewHandler(clientID, secret)
	p.URL = "http://" + addr
	p.Sample()
	log.Printf("platform double on %s: authorize %s, API %s", addr, p.AuthorizeURL(), p.URL)
	return http.ListenAndServe(addr, p)
}

// count waits until no load site has a queued or running scan, then prints the scans by status
// and fails unless there are exactly want, all complete.
func count(ctx context.Context, want int, timeout time.Duration) error {
	st, err := open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	u, err := st.UserByEmail(ctx, demo.Email)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		all, err := st.SitesOf(ctx, u.ID)
		if err != nil {
			return err
		}
		by := map[store.ScanStatus]int{}
		total, loadSites := 0, 0
		for _, s := range all {
			if !strings.HasPrefix(s.PlatformSiteID, "load-site-") {
				continue
			}
			loadSites++
			scans, err := st.ScansOf(ctx, u.ID, s.ID, 1000)
			if err != nil {
				return err
			}
			for _, sc := range scans {
				by[sc.Status]++
				total++
			}
		}
		if by[store.StatusQueued]+by[store.StatusRunning] == 0 || time.Now().After(deadline) {
			fmt.Printf("scans=%d complete=%d failed=%d queued=%d running=%d sites=%d\n", total, by[store.StatusComplete], by[store.StatusFailed],
				by[store.StatusQueued], by[store.StatusRunning], loadSites)
			if total != want || by[store.StatusComplete] != want {
				return fmt.Errorf("want exactly %d complete scans, got %d scans (%d complete)", want, total, by[store.StatusComplete])
			}
			return nil
		}
		time.Sleep(time.Second)
	}
}
