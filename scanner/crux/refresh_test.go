package crux_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"sitepulse/scanner"
	"sitepulse/scanner/crux"
	"sitepulse/scanner/crux/cruxtest"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// refreshRig is a site with two pages, one without field data, the double serving its origin
// and its home page on both devices, and a pool that runs the refresh and the pruner on the
// fake clock.
type refreshRig struct {
	st     store.Store
	clock  *scantest.Clock
	double *cruxtest.Double
	pool   *scanner.Pool
	ref    *crux.Refresher
	owner  store.User
	site   store.Site
}

func newRig(t *testing.T, st store.Store, budget int) *refreshRig {
	ctx := context.Background()
	r := &refreshRig{st: st, clock: scantest.NewClock(now), double: cruxtest.New(last)}
	r.owner = store.User{ID: store.NewID(), Email: "crux-" + store.NewID()[:8] + "@example.com", PasswordHash: "x", CreatedAt: now}
	must(t, st.CreateUser(ctx, r.owner))
	r.site = store.Site{ID: store.NewID(), UserID: r.owner.ID, Name: "shop", Domain: "shop.test", Pages: []string{"/", "/quiet?utm=x"}, CreatedAt: now}
	must(t, st.CreateSite(ctx, r.site))
	for _, ff := range []string{"PHONE", "DESKTOP"} {
		r.double.Set("https://shop.test", ff, steady)
		home := steady
		home.Gaps = []int{7}
		r.double.Set("https://shop.test/", ff, home)
	}
	client := crux.New(crux.Config{Endpoint: cruxtest.Endpoint, Key: testKey, HTTP: r.double.Client(), Budget: crux.NewBudget(budget), Now: r.clock.Now})
	r.ref = &crux.Refresher{Store: st, Now: r.clock.Now, Log: slog.New(slog.DiscardHandler),
		ClientFor: func(store.Site) *crux.Client { return client }}
	r.pool = scanner.NewPool(scanner.PoolConfig{Store: st, Retention: st, Now: r.clock.Now,
		Kinds: []scanner.KindWorker{scanner.Work(1, r.ref.Work)}, Prunes: []func(context.Context, time.Time, int) (int, error){st.PruneCrux}})
	return r
}

// refresh runs the schedule pass at the clock's time and then the refresh jobs it made; it
// answers how many it enqueued.
func (r *refreshRig) refresh(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	n, err := r.ref.ScheduleOnce(ctx, r.clock.Now())
	must(t, err)
	for {
		ran, err := r.pool.WorkOnce(ctx, store.KindCrux)
		must(t, err)
		if !ran {
			return n
		}
	}
}

// series counts the points of a target and says whether any (period, device, metric) repeats.
func (r *refreshRig) series(t *testing.T, page string) (points, periods int, dup bool) {
	t.Helper()
	got, err := r.st.CruxSeries(context.Background(), r.owner.ID, r.site.ID, store.FieldQuery{Page: page})
	must(t, err)
	seen, starts := map[string]bool{}, map[time.Time]bool{}
	for _, p := range got {
		k := fmt.Sprint(p.Start, p.Device, p.Metric)
		dup = dup || seen[k]
		seen[k], starts[p.Start] = true, true
	}
	return len(got), len(starts), dup
}

// TestRefreshJob: a site's weekly refresh stores 40 periods x 5 metrics x 2 devices of its
// origin and of each page with data, and "no field data" for the page the API answers 404; a
// week later it appends the new period without duplicates; a 429 retries the job later, and
// CRUX_DAILY_REQUESTS spent snoozes it to the next day, where it resumes without asking again
// what it stored; retention drops old periods; another workspace's user gets not found. On
// both stores, on the fake clock.
func TestRefreshJob(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Run("weekly refresh", func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				r := newRig(t, b.Open(t), 1000)
				if n := r.refresh(t); n != 1 {
					t.Fatalf("%d refreshes enqueued, want 1", n)
				}
				for _, page := range []string{"", "https://shop.test/"} {
					if n, periods, dup := r.series(t, page); n != 40*5*2 || periods != 40 || dup {
						t.Errorf("%q: %d points over %d periods (duplicates %v), want 400 over 40", page, n, periods, dup)
					}
				}
				if n, _, _ := r.series(t, "https://shop.test/quiet"); n != 0 {
					t.Errorf("%d points of a page without data", n)
				}
				fetches, err := r.st.CruxFetches(ctx, r.owner.ID, r.site.ID)
				must(t, err)
				var got []string
				for _, f := range fetches {
					got = append(got, fmt.Sprintf("%q %s %v %d", f.Page, f.Device, f.Found, f.Periods))
				}
				want := fmt.Sprintf("%q", []string{`"" phone true 40`, `"" desktop true 40`, `"https://shop.test/" phone true 40`, `"https://shop.test/" desktop true 40`,
					`"https://shop.test/quiet" phone false 0`, `"https://shop.test/quiet" desktop false 0`})
				if fmt.Sprintf("%q", got) != want {
					t.Errorf("fetches\n got %q\nwant %s", got, want)
				}
				gaps, err := r.st.CruxSeries(ctx, r.owner.ID, r.site.ID, store.FieldQuery{Page: "https://shop.test/", Device: store.FieldPhone, Metric: "lcp"})
				must(t, err)
				if gaps[7].P75 != nil || gaps[7].Histogram != nil || gaps[6].P75 == nil || len(gaps[6].Histogram) != 3 {
					t.Errorf("the home page's eighth period %+v: want a gap, the seventh a figure", gaps[7])
				}
				if calls := len(r.double.Calls()); calls != 6 {
					t.Errorf("%d API calls, want 3 targets x 2 devices", calls)
				}

				// Within the week nothing is due; a week later the API has a new period.
				if n := r.refresh(t); n != 0 {
					t.Errorf("%d refreshes within the week", n)
				}
				r.clock.Advance(store.CruxEvery)
				r.double.SetLast(last.AddDate(0, 0, 7))
				if n := r.refresh(t); n != 1 {
					t.Fatalf("%d refreshes a week later, want 1", n)
				}
				if n, periods, dup := r.series(t, ""); n != 41*5*2 || periods != 41 || dup {
					t.Errorf("origin after two refreshes: %d points over %d periods (duplicates %v), want 410 over 41", n, periods, dup)
				}

				// Another workspace's user: not found.
				stranger := store.User{ID: store.NewID(), Email: "stranger-" + store.NewID()[:8] + "@example.com", PasswordHash: "x", CreatedAt: now}
				must(t, r.st.CreateUser(ctx, stranger))
				if _, err := r.st.CruxSeries(ctx, stranger.ID, r.site.ID, store.FieldQuery{}); err == nil || !isNotFound(err) {
					t.Errorf("a stranger's read: err %v, want not found", err)
				}

				// Retention: 30 days keeps the periods that ended within them: four of the 28-day
				// windows, which end a day after their lastDate (Saturdays, 2026-11-14 the oldest).
				must(t, r.st.SetRetention(ctx, r.owner.ID, 30))
				pruned, err := r.pool.PruneOnce(ctx)
				must(t, err)
				if n, periods, _ := r.series(t, ""); periods != 4 || pruned != (41-4)*5*2*2 || n != 4*5*2 {
					t.Errorf("after pruning %d rows: %d points over %d periods, want 40 over 4", pruned, n, periods)
				}
			})
			t.Run("429 and the daily budget", func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				r := newRig(t, b.Open(t), 4)
				r.double.TooMany(1, "")
				if n, err := r.ref.ScheduleOnce(ctx, r.clock.Now()); err != nil || n != 1 {
					t.Fatalf("enqueued %d (err %v)", n, err)
				}
				if ran, err := r.pool.WorkOnce(ctx, store.KindCrux); !ran || err != nil {
					t.Fatalf("no refresh ran (err %v)", err)
				}
				if ran, _ := r.pool.WorkOnce(ctx, store.KindCrux); ran {
					t.Fatal("a refresh answered 429 ran again at once")
				}
				r.clock.Advance(time.Minute) // the quota is per minute
				if ran, _ := r.pool.WorkOnce(ctx, store.KindCrux); !ran {
					t.Fatal("the refresh did not run again a minute after its 429")
				}
				// The 429 and three answers spent the budget of 4: the job waits for the next day.
				if n, _, _ := r.series(t, ""); n != 400 {
					t.Errorf("%d origin points before the budget ran out, want 400", n)
				}
				if n, _, _ := r.series(t, "https://shop.test/"); n != 200 {
					t.Errorf("%d home page points before the budget ran out, want the phone's 200", n)
				}
				if ran, _ := r.pool.WorkOnce(ctx, store.KindCrux); ran {
					t.Fatal("a refresh ran with CRUX_DAILY_REQUESTS spent")
				}
				r.clock.Set(time.Date(2026, 12, 3, 0, 0, 1, 0, time.UTC))
				if ran, _ := r.pool.WorkOnce(ctx, store.KindCrux); !ran {
					t.Fatal("the refresh did not resume the next day")
				}
				calls := r.double.Calls()
				if len(calls) != 1+6 {
					t.Errorf("%d calls, want the 429 and each target once", len(calls))
				}
				if n, _, _ := r.series(t, "https://shop.test/"); n != 400 {
					t.Errorf("%d home page points after the resumed refresh, want 400", n)
				}
			})
		})
	}
}

func isNotFound(err error) bool { return store.Classify(err) == store.ErrNotFound }
