package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"sitepulse/store"
)

func (m *Store) EnqueueScan(ctx context.Context, s store.Scan, kind string, runAt time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.enqueue(s, kind, runAt)
}

func (m *Store) EnqueueJob(ctx context.Context, args store.JobArgs, runAt time.Time) (store.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, err := m.insertJob(args.Kind(), args, "", runAt, time.Now())
	return cloneJob(j), err
}

// insertJob stores a job of kind with args as JSON, as Postgres does: a scan kind's ScanID is
// its args' scanId.
func (m *Store) insertJob(kind string, args any, scanID string, runAt, createdAt time.Time) (store.Job, error) {
	if kind == "" {
		return store.Job{}, fmt.Errorf("job args %T: no kind", args)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return store.Job{}, fmt.Errorf("job args of kind %s: %w", kind, err)
	}
	j := store.Job{Kind: kind, Args: raw, ScanID: scanID, WorkspaceID: store.WorkspaceOf(args), State: store.JobAvailable,
		MaxAttempts: store.MaxAttemptsOf(args), RunAt: store.Now(runAt), CreatedAt: store.Now(createdAt)}
	if s, ok := m.scans[scanID]; ok && j.WorkspaceID == "" {
		j.WorkspaceID = m.sites[s.SiteID].WorkspaceID
	}
	m.nextJob++
	j.ID = m.nextJob
	m.jobs[j.ID] = j
	m.wakeAll()
	return j, nil
}

func cloneJob(j store.Job) store.Job {
	j.Args = append(json.RawMessage(nil), j.Args...)
	j.HeartbeatAt, j.FinalizedAt = cloneTime(j.HeartbeatAt), cloneTime(j.FinalizedAt)
	return j
}

func (m *Store) enqueue(s store.Scan, kind string, runAt time.Time) error {
	if _, ok := m.sites[s.SiteID]; !ok {
		return store.NotFound("site")
	}
	for _, o := range m.scans {
		if o.SiteID == s.SiteID && (o.Status == store.StatusQueued || o.Status == store.StatusRunning) {
			return fmt.Errorf("site %s: %w", s.SiteID, store.ErrScanActive)
		}
	}
	s.Status = store.StatusQueued
	s.CreatedAt = store.Now(s.CreatedAt)
	s.StartedAt, s.CompletedAt = nil, nil
	pages := s.Pages
	s.Pages = nil                // kept in the job only, as on Postgres
	m.scans[s.ID] = cloneScan(s) // first: the job's workspace is its scan's site's
	if _, err := m.insertJob(kind, store.ScanJob{ScanID: s.ID, Pages: pages}, s.ID, runAt, s.CreatedAt); err != nil {
		delete(m.scans, s.ID)
		return err
	}
	return nil
}

// ClaimJob is claimSQL's rule in Go, written twice: the contract tests testFairClaims and
// testFairClaimsPerAccount keep the two equal (store/storetest/twice_test.go).
func (m *Store) ClaimJob(ctx context.Context, kind, workerID string, now time.Time, perWorkspace int) (store.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// As Postgres counts them: jobs of the kind running by workspace and by owning account (the
	// workspace's oldest owner), anywhere and under workerID.
	accounts := map[string]string{}
	account := func(ws string) string {
		if ws == "" {
			return ""
		}
		a, ok := accounts[ws]
		if !ok {
			a = m.oldestOwner(ws)
			accounts[ws] = a
		}
		return a
	}
	running, here := map[string]int{}, map[string]int{}
	acctRunning, acctHere := map[string]int{}, map[string]int{}
	for _, j := range m.jobs {
		if j.Kind == kind && j.State == store.JobRunning && j.WorkspaceID != "" {
			a := account(j.WorkspaceID)
			running[j.WorkspaceID]++
			if a != "" {
				acctRunning[a]++
			}
			if j.LockedBy == workerID {
				here[j.WorkspaceID]++
				if a != "" {
					acctHere[a]++
				}
			}
		}
	}
	var best *store.Job
	var bestAcct string
	for _, j := range m.jobs {
		if j.Kind != kind || j.State != store.JobAvailable || j.RunAt.After(now) {
			continue
		}
		a := account(j.WorkspaceID)
		if perWorkspace > 0 && (here[j.WorkspaceID] >= perWorkspace || a != "" && acctHere[a] >= perWorkspace) {
			continue
		}
		an, n := acctRunning[a], running[j.WorkspaceID] // a job of no account: one running none
		if best == nil || an < acctRunning[bestAcct] || an == acctRunning[bestAcct] && (n < running[best.WorkspaceID] || n == running[best.WorkspaceID] &&
			(j.RunAt.Before(best.RunAt) || j.RunAt.Equal(best.RunAt) && j.ID < best.ID)) {
			j := j
			best, bestAcct = &j, a
		}
	}
	if best == nil {
		return store.Job{}, store.NotFound("runnable job")
	}
	j := *best
	j.State, j.Attempt, j.HeartbeatAt, j.LockedBy = store.JobRunning, j.Attempt+1, tp(now), workerID
	m.jobs[j.ID] = j
	return cloneJob(j), nil
}

// leased returns the job of a lease when it is still running under that attempt.
func (m *Store) leased(l store.Lease) (store.Job, error) {
	j, ok := m.jobs[l.JobID]
	if !ok || j.State != store.JobRunning || j.Attempt != l.Attempt {
		return store.Job{}, fmt.Errorf("job %d attempt %d: %w", l.JobID, l.Attempt, store.ErrLeaseLost)
	}
	return j, nil
}

func (m *Store) Heartbeat(ctx context.Context, l store.Lease, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, err := m.leased(l)
	if err != nil {
		return err
	}
	j.HeartbeatAt = tp(now)
	m.jobs[j.ID] = j
	return nil
}

func (m *Store) ScanForJob(ctx context.Context, scanID string) (store.Scan, store.Site, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.scans[scanID]
	if !ok {
		return store.Scan{}, store.Site{}, store.NotFound("scan")
	}
	site, ok := m.sites[s.SiteID]
	if !ok {
		return store.Scan{}, store.Site{}, store.NotFound("site")
	}
	return cloneScan(s), cloneSite(site), nil
}

func (m *Store) ScansByID(ctx context.Context, ids []string) (map[string]store.Scan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]store.Scan{}
	for _, id := range ids {
		if s, ok := m.scans[id]; ok {
			out[id] = cloneScan(s)
		}
	}
	return out, nil
}

func (m *Store) StartScan(ctx context.Context, l store.Lease, pagesTotal int, now time.Time) error {
	return m.updateLeasedScan(l, func(s *store.Scan) {
		s.Status, s.PagesTotal = store.StatusRunning, pagesTotal
		if s.StartedAt == nil {
			s.StartedAt = tp(now)
		}
	})
}

func (m *Store) SetAuditsInFlight(ctx context.Context, l store.Lease, n int) error {
	return m.updateLeasedScan(l, func(s *store.Scan) { s.AuditsInFlight = n })
}

func (m *Store) SetPagesFound(ctx context.Context, l store.Lease, audited, found int) error {
	return m.updateLeasedScan(l, func(s *store.Scan) { s.PagesAudited, s.PagesFound = audited, max(s.PagesFound, found) })
}

// updateLeasedScan changes the scan of a job the lease still holds.
func (m *Store) updateLeasedScan(l store.Lease, change func(*store.Scan)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.leased(l); err != nil {
		return err
	}
	s, ok := m.scans[l.ScanID]
	if !ok {
		return store.NotFound("scan")
	}
	change(&s)
	m.scans[s.ID] = s
	return nil
}

func (m *Store) DonePages(ctx context.Context, scanID string) ([]store.PageKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.PageKey{}
	for k := range m.results[scanID] {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].PagePath != out[j].PagePath {
			return out[i].PagePath < out[j].PagePath
		}
		return out[i].Strategy < out[j].Strategy
	})
	return out, nil
}

func (m *Store) SavePageResult(ctx context.Context, l store.Lease, r store.PageResult) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.leased(l); err != nil {
		return err
	}
	r.ScanID, r.Runs = l.ScanID, max(r.Runs, 1) // as Postgres's decodeResult reads it
	c := clonePageResult(r)
	k := store.PageKey{PagePath: r.PagePath, Strategy: r.Strategy}
	row := memResult{result: &c, explain: store.EncodeExplain(r.Explain), images: keptImages(r.Images)}
	regressed := store.ValidUUID(r.RegressedFrom) && r.RegressedFrom != l.ScanID
	row.pinned = len(row.images) > 0 && (regressed || m.results[l.ScanID][k].pinned)
	m.putResult(l.ScanID, k, row)
	if regressed {
		m.pinImages(r.RegressedFrom, k)
	}
	return nil
}

func (m *Store) SavePageError(ctx context.Context, l store.Lease, e store.PageError) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.leased(l); err != nil {
		return err
	}
	k := store.PageKey{PagePath: e.PagePath, Strategy: e.Strategy}
	if old, ok := m.results[l.ScanID][k]; ok && old.result != nil {
		return nil // a result is never replaced by an error
	}
	e.ScanID = l.ScanID
	m.putResult(l.ScanID, k, memResult{err: e})
	return nil
}

func (m *Store) putResult(scanID string, k store.PageKey, r memResult) {
	if m.results[scanID] == nil {
		m.results[scanID] = map[store.PageKey]memResult{}
	}
	m.results[scanID][k] = r
	s := m.scans[scanID]
	s.PagesDone = len(m.results[scanID])
	m.scans[scanID] = s
}

func (m *Store) CompleteScan(ctx context.Context, l store.Lease, scores store.ScanScores, now time.Time, then ...store.JobArgs) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, err := m.leased(l)
	if err != nil {
		return err
	}
	// The follow-ups first: a failure leaves everything as it was, as Postgres's rollback does.
	var added []int64
	for _, args := range then {
		f, err := m.insertJob(args.Kind(), args, "", now, now)
		if err != nil {
			for _, id := range added {
				delete(m.jobs, id)
			}
			return err
		}
		added = append(added, f.ID)
	}
	j.State, j.FinalizedAt = store.JobCompleted, tp(now)
	m.jobs[j.ID] = j
	s := m.scans[l.ScanID]
	s.Status, s.Scores, s.CompletedAt, s.Error = store.StatusComplete, cloneScores(scores), tp(now), ""
	summary := store.Summarize(m.metricsLocked(s.ID))
	s.Summary, s.Bytes = &summary, m.scanBytes(s.ID)
	m.scans[s.ID] = s
	if site, ok := m.sites[s.SiteID]; ok {
		site.HealthScore = cloneScores(scores).Health
		m.sites[site.ID] = site
	}
	return nil
}

func (m *Store) FailScan(ctx context.Context, l store.Lease, reason string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, err := m.leased(l)
	if err != nil {
		return err
	}
	m.discard(j, reason, now)
	return nil
}

func (m *Store) DiscardJob(ctx context.Context, l store.Lease, reason string, now time.Time) error {
	return m.FailScan(ctx, l, reason, now)
}

func (m *Store) CompleteJob(ctx context.Context, l store.Lease, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[l.JobID]
	switch {
	case ok && j.Attempt == l.Attempt && j.State == store.JobRunning:
		j.State, j.FinalizedAt = store.JobCompleted, tp(now)
		m.jobs[j.ID] = j
		return nil
	case ok && j.Attempt == l.Attempt && (j.State == store.JobCompleted || j.State == store.JobDiscarded):
		return nil // finished by its worker under this attempt (CompleteScan, FailScan)
	}
	return fmt.Errorf("job %d attempt %d: %w", l.JobID, l.Attempt, store.ErrLeaseLost)
}

func (m *Store) CleanJobs(ctx context.Context, finishedBefore time.Time, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var old []store.Job
	for _, j := range m.jobs {
		if (j.State == store.JobCompleted || j.State == store.JobDiscarded) && j.FinalizedAt != nil && j.FinalizedAt.Before(finishedBefore) {
			old = append(old, j)
		}
	}
	sort.Slice(old, func(a, b int) bool { return old[a].FinalizedAt.Before(*old[b].FinalizedAt) })
	old = old[:min(limit, len(old))]
	for _, j := range old {
		delete(m.jobs, j.ID)
	}
	return len(old), nil
}

// discard discards a job and, when it runs a scan, fails the scan with the same reason.
func (m *Store) discard(j store.Job, reason string, now time.Time) {
	j.State, j.LastError, j.FinalizedAt = store.JobDiscarded, reason, tp(now)
	m.jobs[j.ID] = j
	if j.ScanID == "" {
		return
	}
	s, ok := m.scans[j.ScanID]
	s.Status, s.Error, s.CompletedAt = store.StatusFailed, reason, tp(now)
	s.Bytes = m.scanBytes(s.ID)
	m.scans[s.ID] = s
	if ok { // its alerts, as Postgres enqueues them
		m.insertJob(store.KindAlerts, store.AlertsJob{ScanID: s.ID}, "", now, now)
	}
}

func (m *Store) RetryJob(ctx context.Context, l store.Lease, runAt time.Time, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, err := m.leased(l)
	if err != nil {
		return err
	}
	j.State, j.RunAt, j.LastError, j.LockedBy = store.JobAvailable, store.Now(runAt), reason, ""
	m.jobs[j.ID] = j
	return nil
}

func (m *Store) SnoozeJob(ctx context.Context, l store.Lease, runAt time.Time, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, err := m.leased(l)
	if err != nil {
		return err
	}
	j.State, j.RunAt, j.LastError, j.LockedBy = store.JobAvailable, store.Now(runAt), reason, ""
	j.MaxAttempts++
	j.Snoozed++
	m.jobs[j.ID] = j
	return nil
}

func (m *Store) RescueJobs(ctx context.Context, staleBefore, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, j := range m.jobs {
		if j.State != store.JobRunning || j.HeartbeatAt == nil || !j.HeartbeatAt.Before(staleBefore) {
			continue
		}
		n++
		if j.Attempt >= j.MaxAttempts {
			m.discard(j, store.RescueGiveUp, now)
			continue
		}
		// run_at is kept: the job goes back to its place in the queue, ahead of later ones.
		j.State, j.LastError, j.LockedBy = store.JobAvailable, store.RescueReason, ""
		m.jobs[j.ID] = j
	}
	return n, nil
}

func (m *Store) Job(ctx context.Context, id int64) (store.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return store.Job{}, store.NotFound("job")
	}
	return cloneJob(j), nil
}

func (m *Store) OverdueScans(ctx context.Context, startedBefore time.Time) ([]store.OverdueScan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	began := func(s store.Scan) time.Time {
		if s.StartedAt != nil {
			return *s.StartedAt
		}
		return s.CreatedAt
	}
	out := []store.OverdueScan{}
	for _, j := range m.jobs {
		s := m.scans[j.ScanID]
		if j.Kind != store.KindScan || s.Status != store.StatusQueued && s.Status != store.StatusRunning || !began(s).Before(startedBefore) {
			continue
		}
		out = append(out, store.OverdueScan{Scan: cloneScan(s), UserID: m.sites[s.SiteID].UserID, LastError: j.LastError})
	}
	sort.Slice(out, func(a, b int) bool {
		if !began(out[a].Scan).Equal(began(out[b].Scan)) {
			return began(out[a].Scan).Before(began(out[b].Scan))
		}
		return out[a].ID < out[b].ID
	})
	return out, nil
}

func (m *Store) ExpireScan(ctx context.Context, scanID, reason string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.scans[scanID]
	if s.Status != store.StatusQueued && s.Status != store.StatusRunning {
		return store.NotFound("unfinished scan")
	}
	for _, j := range m.jobs {
		if j.ScanID == scanID && j.State != store.JobCompleted && j.State != store.JobDiscarded {
			m.discard(j, reason, now)
			return nil
		}
	}
	return store.NotFound("job")
}

func (m *Store) EnqueueDueScans(ctx context.Context, now time.Time, limit int) ([]store.Scan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var due []store.Site
	for _, s := range m.sites {
		if s.Schedule != store.ScheduleOff && s.NextScanAt != nil && !s.NextScanAt.After(now) {
			due = append(due, s)
		}
	}
	sort.Slice(due, func(a, b int) bool {
		if !due[a].NextScanAt.Equal(*due[b].NextScanAt) {
			return due[a].NextScanAt.Before(*due[b].NextScanAt)
		}
		return due[a].ID < due[b].ID
	})
	out := []store.Scan{}
	for _, site := range due[:min(limit, len(due))] {
		sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerSchedule, CreatedAt: now}
		switch err := m.enqueue(sc, store.KindScan, now); {
		case errors.Is(err, store.ErrScanActive): // one is in flight: it serves as this period's scan
		case err != nil:
			return nil, err
		default:
			sc.Status, sc.CreatedAt = store.StatusQueued, store.Now(now)
			out = append(out, sc)
		}
		site.NextScanAt = store.NextScanAt(site.Schedule, *site.NextScanAt, now)
		m.sites[site.ID] = site
	}
	return out, nil
}
