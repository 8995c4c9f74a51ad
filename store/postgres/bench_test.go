package postgres_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sitepulse/handlers"
	"sitepulse/mcp"
	"sitepulse/oauth"
	"sitepulse/scanner/demo"
	"sitepulse/store"
	"sitepulse/store/postgres"
	"sitepulse/store/storetest"
)

// These benchmarks put the HTTP endpoints beside the floor in one run, on real Postgres
// (DATABASE_URL). They live here, in package postgres_test, because the floor's SQL may only be
// in package postgres (floor_test.go) and this package may also import the handlers.
//
//	DATABASE_URL=... go test ./store/postgres/ -run '^$' -bench . -benchtime 2s

// benchService is a running SitePulse on Postgres with the demo account seeded.
type benchService struct {
	pg      *postgres.Store
	srv     *httptest.Server
	handler http.Handler
	client  *http.Client
	demo    demo.Seeded
	userID  string
}

func newBenchService(b *testing.B) *benchService {
	b.Helper()
	pg := storetest.Postgres(b)
	ctx := context.Background()
	now := time.Now()
	d, err := demo.Seed(ctx, pg, demo.Fixtures{FS: os.DirFS("../.."), Before: "testdata/psi-before", Latest: "testdata/psi"}, now, 1000)
	if err != nil {
		b.Fatal(err)
	}
	u, err := pg.UserByEmail(ctx, demo.Email)
	if err != nil {
		b.Fatal(err)
	}
	h, err := handlers.NewHandler(handlers.Deps{Auth: pg, Accounts: pg, Sites: pg, Budgets: pg, Scans: pg, Reports: pg, API: pg, Webhooks: pg, Connections: pg, Workspaces: pg, Channels: pg, Health: pg, CI: pg, SSO: pg, SecurityLog: pg, BaseURL: "http://127.0.0.1",
		OAuth: oauth.New(oauth.Config{Store: pg, BaseURL: "http://127.0.0.1"}), MCP: mcp.New(mcp.Config{Sites: pg, Scans: pg, Writes: pg, BaseURL: "http://127.0.0.1"})})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}
	b.Cleanup(tr.CloseIdleConnections)
	return &benchService{pg: pg, srv: srv, handler: h, client: &http.Client{Transport: tr}, demo: d, userID: u.ID}
}

// BenchmarkBudgetCheck compares POST /api/external/budget-check over HTTP (an httptest server
// on loopback, keep-alive client, API key auth, the demo site's real scan) with the floor, a
// bare primary-key SELECT through database/sql. The target is budget-check at no less than
// half the floor's throughput; compare their ns/op.
//
// Every sub-benchmark runs 8 goroutines per core (16 here, as wrk -c16): with one per core the
// Postgres round trips leave the CPU idle and the figures measure latency, not throughput.
func BenchmarkBudgetCheck(b *testing.B) {
	s := newBenchService(b)
	ctx := context.Background()
	b.Run("floor: bare primary-key SELECT", func(b *testing.B) {
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.pg.SelectSiteName(ctx, s.demo.SiteID); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	body := []byte(`{"siteId":"` + s.demo.SiteID + `"}`)
	b.Run("budget-check handler, no network", func(b *testing.B) {
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req := httptest.NewRequest("POST", "/api/external/budget-check", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+s.demo.APIKey)
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				s.handler.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Errorf("status %d", rec.Code)
					return
				}
			}
		})
	})
	b.Run("budget-check over HTTP", func(b *testing.B) {
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req, _ := http.NewRequest("POST", s.srv.URL+"/api/external/budget-check", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+s.demo.APIKey)
				req.Header.Set("Content-Type", "application/json")
				if resp, err := s.client.Do(req); !drainOK(b, resp, err) {
					return
				}
			}
		})
	})
	// The same requests from a load generator as lean as wrk: one kept-alive connection per
	// goroutine and a request written from prepared bytes, so the client's own cost (net/http's
	// transport on the same two cores) does not count against the server.
	raw := []byte("POST /api/external/budget-check HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer " + s.demo.APIKey +
		"\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + string(body))
	b.Run("budget-check over HTTP, raw keep-alive client", func(b *testing.B) {
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			conn, err := net.Dial("tcp", s.srv.Listener.Addr().String())
			if err != nil {
				b.Error(err)
				return
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			for pb.Next() {
				if _, err := conn.Write(raw); err != nil {
					b.Error(err)
					return
				}
				if resp, err := http.ReadResponse(br, nil); !drainOK(b, resp, err) {
					return
				}
			}
		})
	})
}

// drainOK reads and closes a budget-check response, reporting false (after an error on b) when
// the request failed or did not answer 200.
func drainOK(b *testing.B, resp *http.Response, err error) bool {
	if err != nil {
		b.Error(err)
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Errorf("status %d", resp.StatusCode)
		return false
	}
	return true
}

// exportPages is the size of the scan BenchmarkExport streams: 5,000 pages, mobile and desktop.
const exportPages = 5000

// BenchmarkExport streams a 5,000-page scan (10,000 rows) as CSV and as JSON over HTTP and
// reports the bytes sent and the peak heap in use while it ran, sampled every millisecond:
// the heap stays far below the response's size because rows are streamed.
func BenchmarkExport(b *testing.B) { benchmarkExport(b, exportPages) }

// BenchmarkExport100 is BenchmarkExport of a 50-page scan (100 rows), the size issue 25 measures.
func BenchmarkExport100(b *testing.B) { benchmarkExport(b, 50) }

func benchmarkExport(b *testing.B, pages int) {
	s := newBenchService(b)
	ctx := context.Background()
	scanID, cookie := seedLargeScan(b, s, pages)
	for _, format := range []string{"csv", "json"} {
		b.Run(format, func(b *testing.B) {
			b.ReportAllocs()
			var peak atomic.Uint64
			var bytesOut int64
			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				var m runtime.MemStats
				for {
					select {
					case <-stop:
						return
					case <-time.After(time.Millisecond):
					}
					runtime.ReadMemStats(&m)
					if m.HeapInuse > peak.Load() {
						peak.Store(m.HeapInuse)
					}
				}
			}()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req, _ := http.NewRequestWithContext(ctx, "GET", s.srv.URL+"/api/sites/"+s.demo.SiteID+"/export?format="+format+"&scanId="+scanID, nil)
				req.AddCookie(cookie)
				resp, err := s.client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("status %d, err %v", resp.StatusCode, err)
				}
				bytesOut = n
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(bytesOut)/(1<<20), "MB-sent/op")
			b.ReportMetric(float64(int64(peak.Load())-int64(base.HeapInuse))/(1<<20), "peak-heap-growth-MB")
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
		})
	}
}

// seedLargeScan records two completed scans of pages pages of the demo site, each page a real
// extracted Lighthouse result with what explains it under a new path: the sample site's home
// page before the publish of testdata/psi-before/site-before.diff, then after it, so the JSON
// export of the later (returned) has each page's requests and what changed since; and a
// session for the demo user.
func seedLargeScan(b *testing.B, s *benchService, pages int) (string, *http.Cookie) {
	b.Helper()
	ctx := context.Background()
	scans, err := s.pg.CompletedScans(ctx, s.userID, s.demo.SiteID, 2)
	if err != nil || len(scans) < 2 {
		b.Fatalf("demo scans: %d, %v", len(scans), err)
	}
	now := time.Now()
	var id string
	for i, from := range []string{scans[1].ID, scans[0].ID} { // before the publish, then after
		var runs []store.PageResult
		for _, strategy := range []store.Strategy{store.StrategyMobile, store.StrategyDesktop} {
			r, err := s.pg.PageResult(ctx, s.userID, from, "/", strategy)
			if err != nil || r.Explain == nil {
				b.Fatalf("demo result of / %s: explained %v, %v", strategy, r.Explain != nil, err)
			}
			runs = append(runs, r)
		}
		id = recordLargeScan(b, s, pages, runs, now.Add(time.Duration(i)*time.Hour))
	}
	now = now.Add(2 * time.Hour)
	token, hash := store.NewSecret("")
	if err := s.pg.CreateSession(ctx, store.Session{TokenHash: hash, UserID: s.userID, CSRF: "x", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		b.Fatal(err)
	}
	return id, &http.Cookie{Name: "session", Value: token}
}

// recordLargeScan records a completed scan of pages pages of the demo site, completed at at,
// each page runs (one per strategy) under a new path.
func recordLargeScan(b *testing.B, s *benchService, pages int, runs []store.PageResult, at time.Time) string {
	b.Helper()
	ctx := context.Background()
	sc := store.Scan{ID: store.NewID(), SiteID: s.demo.SiteID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: at}
	if err := s.pg.EnqueueScan(ctx, sc, store.KindDemo, at); err != nil {
		b.Fatal(err)
	}
	job, err := s.pg.ClaimJob(ctx, store.KindDemo, "bench", at, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.pg.StartScan(ctx, job.Lease(), len(runs)*pages, at); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < pages; i += 8 {
				for _, r := range runs {
					r.PagePath = fmt.Sprintf("/page-%05d", i)
					r.PageURL = "https://" + demo.Domain + r.PagePath
					if err := s.pg.SavePageResult(ctx, job.Lease(), r); err != nil {
						errs <- err
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	if err := s.pg.CompleteScan(ctx, job.Lease(), store.ScanScores{}, at.Add(time.Minute)); err != nil {
		b.Fatal(err)
	}
	return sc.ID
}

// BenchmarkKeyReads measures the two reads issue 46 holds to Lighthouse CI's and to the composed
// floor, the budget check and MCP get_latest_scan with an API key, through the whole handler
// (middleware, authentication, the one statement, the kept answer) without the network, one
// request at a time: the process's CPU per request (cpu-ns/op), and the allocations the service
// makes per request (the request and its writer are reused, so they are the handler's alone).
//
//	DATABASE_URL=... go test ./store/postgres/ -run '^$' -bench KeyReads -benchmem -count 6
func BenchmarkKeyReads(b *testing.B) {
	s := newBenchService(b)
	mcpBody := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"` + s.demo.SiteID + `"}}}`
	for _, c := range []struct{ name, path, body string }{
		{"budget check", "/api/external/budget-check", `{"siteId":"` + s.demo.SiteID + `"}`},
		{"MCP get_latest_scan", "/api/mcp", mcpBody},
	} {
		b.Run(c.name, func(b *testing.B) {
			body := bytes.NewReader([]byte(c.body))
			req := httptest.NewRequest("POST", c.path, body)
			req.Header.Set("Authorization", "Bearer "+s.demo.APIKey)
			req.Header.Set("Content-Type", "application/json")
			w := &discardWriter{header: http.Header{}}
			serve := func() {
				body.Seek(0, io.SeekStart)
				clear(w.header)
				w.status = 0
				s.handler.ServeHTTP(w, req)
			}
			if serve(); w.status != 200 {
				b.Fatalf("status %d", w.status)
			}
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				serve()
			}
			// The process's CPU per request (user and system, garbage collection included; not
			// Postgres's): robust to a busy machine, unlike ns/op, which is mostly waiting.
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time this process has used (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// discardWriter is a ResponseWriter that keeps the status and drops the body.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	return len(b), nil
}
func (w *discardWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}
