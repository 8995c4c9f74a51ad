package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
)

// ingest is SitePulse's half of the ingest comparison with the Lighthouse CI server
// (.ci/mcp-vs-lhci.sh): workers goroutines, for duration, each take the PSI answer of a real
// audit (fixtures/home.mobile.json, 340 kB with its Lighthouse report) through what the pool
// does with an audit's answer: lighthouse.ExtractPSI (scores, vitals, what explains the result
// and its pictures) and store.SavePageResult (one statement: the result, its explain data and
// its pictures, under the scan's lease). Each worker holds the lease of a scan of its own, and
// every result is a page of its own. It prints one line as wrk.lua's:
//
//	RESULT requests=N rps=R cpu_ms_per_request=C
//
// where C is this process's CPU (user and system) per stored result, Postgres's not counted.
// With warmup, the workers run that long first, not counted: a service's pool runs for hours on
// connections it keeps (30 minutes each), each Postgres backend having mapped the shared
// buffers it writes through, and a heap already grown; a fresh process spends its first
// seconds faulting those pages in (the Lighthouse CI server it is compared with is a server
// that has run).
func ingest(ctx context.Context, w io.Writer, fixtures string, workers int, warmup, duration time.Duration) error {
	if workers < 1 {
		return errors.New("ingest: -c must be at least 1")
	}
	body, err := os.ReadFile(fixtures + "/home.mobile.json")
	if err != nil {
		return err
	}
	st, err := open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now().UTC()
	u := store.User{ID: store.NewID(), Email: "ingest-" + store.NewID()[:8] + "@sitepulse.test", PasswordHash: "x", CreatedAt: now}
	if err := st.CreateUser(ctx, u); err != nil {
		return err
	}
	const kind = "ingest_bench"
	leases := make([]store.Lease, workers)
	for i := range leases {
		site := store.Site{ID: store.NewID(), UserID: u.ID, Name: fmt.Sprintf("Ingest %02d", i), Domain: "ingest.sitepulse.test", Pages: []string{"/"}, CreatedAt: now}
		if err := st.CreateSite(ctx, site); err != nil {
			return err
		}
		sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyMobile, Trigger: store.TriggerManual, CreatedAt: now}
		if err := st.EnqueueScan(ctx, sc, kind, now); err != nil {
			return err
		}
		job, err := st.ClaimJob(ctx, kind, "loadkit", now, 0)
		if err != nil {
			return err
		}
		leases[i] = job.Lease()
		if err := st.StartScan(ctx, leases[i], 1_000_000, now); err != nil {
			return err
		}
	}
	var stored atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	deadline := time.Now().Add(warmup + duration)
	for i := range leases {
		wg.Go(func() {
			for n := 0; time.Now().Before(deadline); n++ {
				r, err := lighthouse.ExtractPSI(body)
				if err != nil {
					errs <- err
					return
				}
				r.PagePath = fmt.Sprintf("/page-%07d", n)
				r.PageURL = "https://ingest.sitepulse.test" + r.PagePath
				if err := st.SavePageResult(ctx, leases[i], r); err != nil {
					errs <- err
					return
				}
				stored.Add(1)
			}
		})
	}
	time.Sleep(warmup)
	n0, cpu0, start := stored.Load(), processCPU(), time.Now()
	wg.Wait()
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	select {
	case err := <-errs:
		return err
	default:
	}
	n := stored.Load() - n0
	fmt.Fprintf(w, "RESULT requests=%d rps=%.0f cpu_ms_per_request=%.3f\n", n, float64(n)/elapsed.Seconds(), cpu.Seconds()*1000/float64(max(n, 1)))
	return nil
}

// processCPU is the CPU time (user and system) this process has used, from /proc/self/stat
// (clock ticks of 1/100 s, as Linux reports them to user space).
func processCPU() time.Duration {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	var utime, stime int64
	// Fields 14 and 15 after the command, which is in parentheses and may hold spaces.
	i := len(b) - 1
	for i > 0 && b[i] != ')' {
		i--
	}
	var skip string
	fmt.Sscan(string(b[i+2:]), &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &utime, &stime)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// hello is the composed floor's Go half: a net/http server answering every request with a
// 13-byte body, nothing else (.ci/mcp-vs-lhci.sh).
func hello(addr string) error {
	return http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("Hello, world\n"))
	}))
}
