package postgres

import "testing"
import "sitepulse/store"

import "github.com/lib/pq"

// The budget cache answers only for the version it holds, never lets an older read replace a
// newer one, and starts over rather than grow past budgetCacheResults page results.
func TestBudgetCache(t *testing.T) {
	var c budgetCache
	results := func(n int) store.BudgetInputs {
		return store.BudgetInputs{SiteName: "s", Results: make([]store.PageResult, n)}
	}

	c.put("a", 2, results(10))
	if _, ok := c.get("a", 2); !ok {
		t.Fatal("no hit for the version put")
	}
	for _, v := range []int64{1, 3} {
		if _, ok := c.get("a", v); ok {
			t.Errorf("hit for version %d, holding 2", v)
		}
	}
	if _, ok := c.get("b", 0); ok {
		t.Error("hit for a site never put")
	}

	c.put("a", 1, results(1)) // a slower check's older read
	if in, ok := c.get("a", 2); !ok || len(in.Results) != 10 {
		t.Errorf("an older read replaced the newer one: %+v %v", in, ok)
	}
	c.put("a", 3, results(20))
	if c.results != 20 {
		t.Errorf("results counted %d after replacing a site's entry, want 20", c.results)
	}

	c.put("b", 1, results(budgetCacheResults-20))
	if _, ok := c.get("a", 3); !ok || c.results != budgetCacheResults {
		t.Errorf("full but not over: a kept %v, results %d", ok, c.results)
	}
	c.put("c", 1, results(1))
	if _, ok := c.get("a", 3); ok || len(c.entries) != 1 || c.results != 1 {
		t.Errorf("over the bound: %d entries, %d results, want only c", len(c.entries), c.results)
	}
}

// TestVersionCall: the statement is the one pq.QuoteLiteral would write, for well-formed ids and
// for any other string.
func TestVersionCall(t *testing.T) {
	for _, ids := range [][2]string{
		{"db70cd1b-6212-4f26-9739-cf3fa057352c", "e9dde5ee-b9bd-4742-bfb2-e59533885d25"},
		{"DB70CD1B-6212-4F26-9739-CF3FA057352C", "e9dde5ee-b9bd-4742-bfb2-e59533885d25"},
		{"x') OR true --", `a\'b`},
	} {
		want := "SELECT site_version(" + pq.QuoteLiteral(ids[0]) + ", " + pq.QuoteLiteral(ids[1]) + ")"
		if got := versionCall("site_version", ids[0], ids[1]); got != want {
			t.Errorf("versionCall(%q, %q) = %s, want %s", ids[0], ids[1], got, want)
		}
	}
}
