// Package lhtest gives tests the real Lighthouse runs of the repository's testdata as the
// service stores them, and runs of many requests made from them.
package lhtest

import (
	"os"
	"slices"
	"strconv"
	"testing"

	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
)

// Explained is the page result of the real PSI answer at path (testdata/psi/home.mobile.json,
// relative to the test's package), with what explains it; the test fails without.
func Explained(t testing.TB, path string) store.PageResult {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := lighthouse.ExtractPSI(body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Explain == nil {
		t.Fatalf("%s has no explain data", path)
	}
	return r
}

// Repeated is a run's explain with its requests repeated until it has n: each copy's URLs get a
// query of their own, so they stay distinct requests, as on a page of many (the fixtures' pages
// make 2 to 11).
func Repeated(e *store.Explain, n int) *store.Explain {
	out := *e
	out.Requests = nil
	for i := 0; len(out.Requests) < n; i++ {
		for _, r := range e.Requests {
			if len(out.Requests) == n {
				break
			}
			if i > 0 {
				r.URL += "?copy=" + strconv.Itoa(i)
				r.LCP, r.RenderBlocking = false, false
				if r.Type == "Document" {
					r.Type = "Fetch"
				}
			}
			out.Requests = append(out.Requests, r)
		}
	}
	slices.SortStableFunc(out.Requests, func(a, b store.Request) int { return a.StartMs - b.StartMs })
	return &out
}
