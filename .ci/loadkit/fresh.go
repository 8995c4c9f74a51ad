package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// fresh measures how soon a running service's budget check sees another process's write
// (issue 46 item 4: a process that follows the sites' versions answers from the version it
// holds until the write's notification arrives): n times, it renames the site LOAD_SITE with
// its own connection to DATABASE_URL (another process, as a second replica or psql would),
// then sends the budget check with LOAD_KEY to base at once, and again until the answer names
// the new name. It prints how many first answers still named the old one, and the longest wait:
//
//	RESULT pairs=N stale_first=S longest_ms=L
func fresh(ctx context.Context, w io.Writer, base string, n int) error {
	key, site := os.Getenv("LOAD_KEY"), os.Getenv("LOAD_SITE")
	if key == "" || site == "" {
		return fmt.Errorf("fresh: LOAD_KEY and LOAD_SITE (loadkit seed's exports) are not set")
	}
	db, err := sql.Open("postgres", os.Getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer db.Close()
	body := `{"siteId":"` + site + `"}`
	name := func() (string, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/external/budget-check", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var a struct{ Site string }
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != 200 {
			return "", fmt.Errorf("budget check: %d %v", resp.StatusCode, err)
		}
		return a.Site, nil
	}
	if _, err := name(); err != nil { // the service holds the site
		return err
	}
	stale, longest := 0, time.Duration(0)
	for i := range n {
		want := fmt.Sprintf("Fresh %06d", i)
		if _, err := db.ExecContext(ctx, `UPDATE sites SET name = $1 WHERE id = $2`, want, site); err != nil {
			return err
		}
		wrote := time.Now()
		for first := true; ; first = false {
			got, err := name()
			if err != nil {
				return err
			}
			if got == want {
				longest = max(longest, time.Since(wrote))
				break
			}
			if first {
				stale++
			}
			if time.Since(wrote) > 5*time.Second {
				return fmt.Errorf("fresh: the rename %q not seen after 5 s (answer %q)", want, got)
			}
		}
	}
	fmt.Fprintf(w, "RESULT pairs=%d stale_first=%d longest_ms=%.3f\n", n, stale, float64(longest.Microseconds())/1000)
	return nil
}
