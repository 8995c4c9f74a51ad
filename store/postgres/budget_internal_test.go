package postgres

import (
	"fmt"
	"testing"
)
import "sitepulse/store"

import "github.com/lib/pq"

// The budget cache answers only for the version it holds, never lets an older read replace a
// newer one, and starts over rather than grow past budgetCacheResults page results.
func TestBudgetCache(t *testing.T) {
	var c budgetCache
	results := func(n int) store.BudgetInputs {
		return store.BudgetInputs{SiteName: "s", Results: make([]store.PageResult, n)}
	}

	c.put("a", 2, "w", results(10))
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

	c.put("a", 1, "w", results(1)) // a slower check's older read
	if in, ok := c.get("a", 2); !ok || len(in.Results) != 10 {
		t.Errorf("an older read replaced the newer one: %+v %v", in, ok)
	}
	c.put("a", 3, "w", results(20))
	if c.results != 20 {
		t.Errorf("results counted %d after replacing a site's entry, want 20", c.results)
	}

	c.put("b", 1, "w", results(budgetCacheResults-20))
	if _, ok := c.get("a", 3); !ok || c.results != budgetCacheResults {
		t.Errorf("full but not over: a kept %v, results %d", ok, c.results)
	}
	c.put("c", 1, "w", results(1))
	if _, ok := c.get("a", 3); ok || len(c.entries) != 1 || c.results != 1 {
		t.Errorf("over the bound: %d entries, %d results, want only c", len(c.entries), c.results)
	}
}

// A user found a member of a site's workspace is remembered for the version they were found at
// only (migration 058 moves the version when a member leaves or changes role): not for another
// version, not after a newer read replaces the entry, and at most maxReaders per site.
func TestBudgetCacheReaders(t *testing.T) {
	var c budgetCache
	if v, _, member := c.probe("a", "u"); v != noVersion || member {
		t.Fatalf("probe of a site never put: %d %v", v, member)
	}
	c.put("a", 2, "w", store.BudgetInputs{})
	c.addReader("a", 1, "u") // found at an older version: not at this one
	if v, ws, member := c.probe("a", "u"); v != 2 || ws != "w" || member {
		t.Errorf("probe = %d %q %v, want 2 \"w\" false", v, ws, member)
	}
	c.addReader("a", 2, "u")
	if _, _, member := c.probe("a", "u"); !member {
		t.Error("a reader found at the version held is not remembered")
	}
	if _, _, member := c.probe("a", "v"); member {
		t.Error("another user is taken for a reader")
	}
	c.put("a", 2, "w", store.BudgetInputs{}) // the same version read again keeps its readers
	if _, _, member := c.probe("a", "u"); !member {
		t.Error("a read of the same version dropped the readers")
	}
	c.put("a", 3, "w", store.BudgetInputs{})
	if _, _, member := c.probe("a", "u"); member {
		t.Error("a reader of version 2 is taken for a reader of version 3")
	}
	for i := range maxReaders + 5 {
		c.addReader("a", 3, fmt.Sprint("user-", i))
	}
	if n := len(c.entries["a"].readers); n != maxReaders {
		t.Errorf("%d readers kept, want at most %d", n, maxReaders)
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
