package postgres_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// BenchmarkSavePageResult is the store's half of ingest (.ci/loadkit ingest, issue 46 item 4):
// the page result of a real audit (testdata/psi/home.mobile.json, extracted once: its result,
// explain data and five pictures) saved under a scan's lease, one page after another, one
// result at a time. It reports the process's CPU per result (cpu-ns/op: encoding the result
// and its explain data, the parameters, lib/pq; not Postgres's) and the allocations.
//
//	DATABASE_URL=... go test ./store/postgres/ -run '^$' -bench SavePageResult -benchmem -count 6
func BenchmarkSavePageResult(b *testing.B) {
	pg := storetest.Postgres(b)
	ctx := context.Background()
	body, err := os.ReadFile("../../testdata/psi/home.mobile.json")
	if err != nil {
		b.Fatal(err)
	}
	r, err := lighthouse.ExtractPSI(body)
	if err != nil {
		b.Fatal(err)
	}
	if len(r.Images) == 0 || r.Explain == nil {
		b.Fatalf("the fixture extracted %d pictures, explain %v", len(r.Images), r.Explain != nil)
	}
	now := time.Now().UTC()
	u := store.User{ID: store.NewID(), Email: "ingest@example.com", PasswordHash: "x", CreatedAt: now}
	site := store.Site{ID: store.NewID(), UserID: u.ID, Name: "Ingest", Domain: "ingest.example", Pages: []string{"/"}, CreatedAt: now}
	sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyMobile, Trigger: store.TriggerManual, CreatedAt: now}
	if err := pg.CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	if err := pg.CreateSite(ctx, site); err != nil {
		b.Fatal(err)
	}
	if err := pg.EnqueueScan(ctx, sc, "ingest_bench", now); err != nil {
		b.Fatal(err)
	}
	job, err := pg.ClaimJob(ctx, "ingest_bench", "bench", now, 0)
	if err != nil {
		b.Fatal(err)
	}
	lease := job.Lease()
	if err := pg.StartScan(ctx, lease, 1_000_000, now); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	cpu := processCPU()
	for b.Loop() {
		r.PagePath = fmt.Sprintf("/page-%07d", n)
		r.PageURL = "https://ingest.example" + r.PagePath
		n++
		if err := pg.SavePageResult(ctx, lease, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}
