package postgres_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"sitepulse/handlers"
	"sitepulse/handlers/beacon"
	"sitepulse/mcp"
	"sitepulse/oauth"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// beaconBody is a page view's beacon as the script sends it: five figures with attribution.
func beaconBody(i int) string {
	return fmt.Sprintf(`{"p":"/page-%d","d":"%s","nt":"navigate","m":[{"n":"ttfb","v":%d},{"n":"fcp","v":%d},`+
		`{"n":"lcp","v":%d,"t":"img.hero","u":"https://shop.example/hero-%d.jpg"},{"n":"cls","v":0.0%d,"t":"main>div.banner"},`+
		`{"n":"inp","v":%d,"t":"button.plan-toggle","e":"click","i":4,"r":%d,"s":16}]}`,
		i%50, []string{"phone", "desktop"}[i%2], 80+i%400, 600+i%2000, 1200+i%4000, i%3, i%9, 60+i%500, (40+i%500)/2)
}

// BenchmarkBeaconIngest sends beacons to POST /api/beacon/{publicId} over HTTP (loopback,
// one kept-alive raw connection per goroutine, 8 per core, as wrk -c16 would) while the ingest
// flushes to Postgres every second, as in the service. It reports beacons/s and the p99 of the
// requests' latency, then checks that every beacon reached the store.
//
//	DATABASE_URL=... go test ./store/postgres/ -run '^$' -bench BeaconIngest -benchtime 200000x
func BenchmarkBeaconIngest(b *testing.B) {
	pg := storetest.Postgres(b)
	ctx := context.Background()
	u := store.User{ID: store.NewID(), Email: "bench@example.com", PasswordHash: "x", CreatedAt: time.Now()}
	site := store.Site{ID: store.NewID(), UserID: u.ID, Name: "Shop", Domain: "shop.example", Pages: []string{"/"}, CreatedAt: time.Now()}
	if err := pg.CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	if err := pg.CreateSite(ctx, site); err != nil {
		b.Fatal(err)
	}
	key, err := pg.BeaconKey(ctx, u.ID, site.ID)
	if err != nil {
		b.Fatal(err)
	}
	// Limits out of the way (one address sends everything here); the cap too, so that every
	// beacon is written rather than sampled away.
	in := beacon.New(pg, beacon.Options{FlushEvery: time.Second, DailyCap: 1 << 40, SiteRate: 1e9, AddrRate: 1e9})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { in.Run(runCtx); close(done) }()
	h, err := handlers.NewHandler(handlers.Deps{Auth: pg, Accounts: pg, Sites: pg, Budgets: pg, Scans: pg, Reports: pg, API: pg, Webhooks: pg,
		Connections: pg, Workspaces: pg, Channels: pg, Health: pg, CI: pg, Beacons: pg, Beacon: in, SSO: pg, SecurityLog: pg, BaseURL: "http://127.0.0.1",
		OAuth: oauth.New(oauth.Config{Store: pg, BaseURL: "http://127.0.0.1"}), MCP: mcp.New(mcp.Config{Sites: pg, Scans: pg, Writes: pg, BaseURL: "http://127.0.0.1"})})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	bodies := make([][]byte, 1000)
	for i := range bodies {
		body := beaconBody(i)
		bodies[i] = []byte("POST /api/beacon/" + key + " HTTP/1.1\r\nHost: bench\r\nOrigin: https://shop.example\r\nContent-Type: text/plain;charset=UTF-8\r\nContent-Length: " +
			fmt.Sprint(len(body)) + "\r\n\r\n" + body)
	}
	var mu sync.Mutex
	var latencies []time.Duration
	b.SetParallelism(8)
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			b.Error(err)
			return
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		mine := make([]time.Duration, 0, 4096)
		for i := 0; pb.Next(); i++ {
			t0 := time.Now()
			if _, err := conn.Write(bodies[i%len(bodies)]); err != nil {
				b.Error(err)
				return
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		latencies = append(latencies, mine...)
		mu.Unlock()
	})
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	stop()
	<-done // the final flush
	slices.Sort(latencies)
	if len(latencies) > 0 {
		b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "beacons/s")
		b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
		// This process's CPU (server and client together) per beacon: on a shared machine the
		// wall-clock rate says how busy the machine was; this says what a beacon costs.
		b.ReportMetric(float64(cpu.Microseconds())/float64(len(latencies)), "cpu-µs/beacon")
	}
	views, err := pg.BeaconViewsOf(ctx, site.ID, store.FieldQuery{})
	if err != nil {
		b.Fatal(err)
	}
	var n float64
	for _, v := range views {
		n += v.Count
	}
	if int(n) != len(latencies) {
		b.Fatalf("%v page views stored, %d beacons accepted", n, len(latencies))
	}
}

// cpuTime is the CPU time this process used so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
