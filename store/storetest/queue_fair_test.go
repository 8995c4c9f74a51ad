package storetest_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
)

// workspaceJob is a kind whose args name their workspace, as an alert delivery's do.
type workspaceJob struct {
	WS string `json:"ws"`
	N  int    `json:"n"`
}

func (workspaceJob) Kind() string        { return "fair" }
func (j workspaceJob) Workspace() string { return j.WS }

// testFairClaims: workspaces take turns at the claim, and a workspace at its cap of running
// jobs gets none while another's wait (issue 34: six start_scan calls of one tenant made
// another's Scan now wait 20 s, first come first served).
func testFairClaims(t *testing.T, s store.Store) {
	a, b, c := newUser(t, s, "a@example.com"), newUser(t, s, "b@example.com"), newUser(t, s, "c@example.com")
	name := map[string]string{}
	queue := func(u store.User, tag string, n int, at time.Time) {
		for i := range n {
			site := newSite(t, s, u, fmt.Sprintf("%s%d", tag, i+1))
			sc := enqueue(t, s, site, at.Add(time.Duration(i)*time.Second))
			name[sc.ID] = fmt.Sprintf("%s%d", tag, i+1)
		}
	}
	// One workspace queues four scans first, another three, a third one last: first come first
	// served would run A1..A4 before anyone else's.
	queue(a, "A", 4, t0)
	queue(b, "B", 3, t0.Add(time.Minute))
	queue(c, "C", 1, t0.Add(2*time.Minute))
	var order []string
	for range 8 {
		j, err := s.ClaimJob(ctx, store.KindScan, "w", t0.Add(time.Hour), 0)
		must(t, err)
		order = append(order, name[j.ScanID])
		if owner := map[byte]string{'A': a.ID, 'B': b.ID, 'C': c.ID}[name[j.ScanID][0]]; j.WorkspaceID != owner {
			t.Errorf("scan %s's job has workspace %q, want its site's %q", name[j.ScanID], j.WorkspaceID, owner)
		}
	}
	if got, want := strings.Join(order, " "), "A1 B1 C1 A2 B2 A3 B3 A4"; got != want {
		t.Errorf("claim order %s, want workspaces taking turns: %s", got, want)
	}

	// A cap of 2 running jobs a workspace: A's third waits while B's and a job of no workspace
	// are claimed, and is claimed once one of A's ends. The workspace comes from the args.
	for i := range 5 {
		_, err := s.EnqueueJob(ctx, workspaceJob{WS: a.ID, N: i + 1}, t0.Add(time.Duration(i)*time.Second))
		must(t, err)
	}
	_, err := s.EnqueueJob(ctx, workspaceJob{WS: b.ID, N: 1}, t0.Add(time.Minute))
	must(t, err)
	_, err = s.EnqueueJob(ctx, workspaceJob{N: 1}, t0.Add(2*time.Minute))
	must(t, err)
	claim := func() (store.Job, string) {
		t.Helper()
		j, err := s.ClaimJob(ctx, "fair", "w", t0.Add(time.Hour), 2)
		if err != nil {
			wantErr(t, err, store.ErrNotFound)
			return j, "none"
		}
		var args workspaceJob
		must(t, json.Unmarshal(j.Args, &args))
		if j.WorkspaceID != args.WS {
			t.Errorf("job %+v: workspace %q, want its args' %q", j, j.WorkspaceID, args.WS)
		}
		return j, fmt.Sprintf("%s%d", map[string]string{a.ID: "A", b.ID: "B", "": "-"}[j.WorkspaceID], args.N)
	}
	first, got := claim()
	order = []string{got}
	for range 4 {
		_, got := claim()
		order = append(order, got)
	}
	must(t, s.CompleteJob(ctx, first.Lease(), t0.Add(time.Hour)))
	for range 2 {
		_, got := claim()
		order = append(order, got)
	}
	if got, want := strings.Join(order, " "), "A1 B1 -1 A2 none A3 none"; got != want {
		t.Errorf("claims under a cap of 2: %s, want %s", got, want)
	}
	// The cap is per worker (process): another one still takes A's jobs, up to its own 2.
	for i, want := range []bool{true, true, false} {
		j, err := s.ClaimJob(ctx, "fair", "v", t0.Add(time.Hour), 2)
		if got := err == nil && j.WorkspaceID == a.ID; got != want {
			t.Errorf("another worker's claim %d: %+v, %v; want A's job: %v", i+1, j, err, want)
		}
	}
}

// testFairClaimsPerAccount: the cap of running jobs a worker gives a workspace is also the cap
// it gives the workspace's owning account (its oldest owner) across all the workspaces it owns,
// and accounts take turns before workspaces do (issue 44 item 1: one account with two
// workspaces held every scan worker, SCANS_PER_WORKSPACE 2 of 3, while another tenant's Scan
// now waited). Written twice: claimSQL with migration 038's job_account, and the memory
// store's ClaimJob.
func testFairClaimsPerAccount(t *testing.T, s store.Store) {
	a, b := newUser(t, s, "a@example.com"), newUser(t, s, "b@example.com")
	x := store.Workspace{ID: store.NewID(), Name: "A's second", CreatedAt: t0}
	must(t, s.CreateWorkspace(ctx, x, a.ID, 10))
	tag := map[string]string{a.ID: "A", x.ID: "X", b.ID: "B"}
	for i, ws := range []string{a.ID, x.ID, b.ID} {
		for n := range 3 {
			_, err := s.EnqueueJob(ctx, workspaceJob{WS: ws, N: n + 1}, t0.Add(time.Duration(i)*time.Minute+time.Duration(n)*time.Second))
			must(t, err)
		}
	}
	claim := func(worker string) string {
		t.Helper()
		j, err := s.ClaimJob(ctx, "fair", worker, t0.Add(time.Hour), 2)
		if err != nil {
			wantErr(t, err, store.ErrNotFound)
			return "none"
		}
		var args workspaceJob
		must(t, json.Unmarshal(j.Args, &args))
		return fmt.Sprintf("%s%d", tag[j.WorkspaceID], args.N)
	}
	var order []string
	for range 6 {
		order = append(order, claim("w"))
	}
	// A1 first (oldest), then B's account (none running) before A's second workspace, then X1
	// (A's account and B's run one each; X runs none), then A's account is at its cap of 2.
	if got, want := strings.Join(order, " "), "A1 B1 X1 B2 none none"; got != want {
		t.Errorf("claims under a cap of 2 per workspace and account: %s, want %s", got, want)
	}
	// The cap is per worker (process): another takes A's account's jobs up to its own 2.
	if got, want := claim("v")+" "+claim("v")+" "+claim("v"), "A2 B3 X2"; got != want {
		t.Errorf("another worker's claims: %s, want %s", got, want)
	}
}
