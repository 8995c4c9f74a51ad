package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

func (m *Memory) EnqueueScan(ctx context.Context, s Scan, queue string, runAt time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.enqueue(s, queue, runAt)
}

func (m *Memory) enqueue(s Scan, queue string, runAt time.Time) error {
	if _, ok := m.sites[s.SiteID]; !ok {
		return notFound("site")
	}
	for _, o := range m.scans {
		if o.SiteID == s.SiteID && (o.Status == StatusQueued || o.Status == StatusRunning) {
			return fmt.Errorf("site %s: %w", s.SiteID, ErrScanActive)
		}
	}
	s.Status = StatusQueued
	s.CreatedAt = Now(s.CreatedAt)
	s.StartedAt, s.CompletedAt = nil, nil
	m.scans[s.ID] = cloneScan(s)
	m.nextJob++
	m.jobs[m.nextJob] = Job{
		ID: m.nextJob, Queue: queue, ScanID: s.ID, State: JobAvailable,
		MaxAttempts: MaxAttempts, RunAt: Now(runAt), CreatedAt: s.CreatedAt,
	}
	return nil
}

func (m *Memory) ClaimJob(ctx context.Context, queue, workerID string, now time.Time) (Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best *Job
	for _, j := range m.jobs {
		if j.Queue != queue || j.State != JobAvailable || j.RunAt.After(now) {
			continue
		}
		if best == nil || j.RunAt.Before(best.RunAt) || j.RunAt.Equal(best.RunAt) && j.ID < best.ID {
			j := j
			best = &j
		}
	}
	if best == nil {
		return Job{}, notFound("runnable job")
	}
	j := *best
	j.State, j.Attempt, j.HeartbeatAt, j.LockedBy = JobRunning, j.Attempt+1, tp(now), workerID
	m.jobs[j.ID] = j
	j.HeartbeatAt = cloneTime(j.HeartbeatAt)
	return j, nil
}

// leased returns the job of a lease when it is still running under that attempt.
func (m *Memory) leased(l Lease) (Job, error) {
	j, ok := m.jobs[l.JobID]
	if !ok || j.State != JobRunning || j.Attempt != l.Attempt {
		return Job{}, fmt.Errorf("job %d attempt %d: %w", l.JobID, l.Attempt, ErrLeaseLost)
	}
	return j, nil
}

func (m *Memory) Heartbeat(ctx context.Context, l Lease, now time.Time) error {
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

func (m *Memory) ScanForJob(ctx context.Context, scanID string) (Scan, Site, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.scans[scanID]
	if !ok {
		return Scan{}, Site{}, notFound("scan")
	}
	site, ok := m.sites[s.SiteID]
	if !ok {
		return Scan{}, Site{}, notFound("site")
	}
	return cloneScan(s), cloneSite(site), nil
}

func (m *Memory) StartScan(ctx context.Context, l Lease, pagesTotal int, now time.Time) error {
	return m.updateLeasedScan(l, func(s *Scan) {
		s.Status, s.PagesTotal = StatusRunning, pagesTotal
		if s.StartedAt == nil {
			s.StartedAt = tp(now)
		}
	})
}

func (m *Memory) SetAuditsInFlight(ctx context.Context, l Lease, n int) error {
	return m.updateLeasedScan(l, func(s *Scan) { s.AuditsInFlight = n })
}

func (m *Memory) SetPagesFound(ctx context.Context, l Lease, found int) error {
	return m.updateLeasedScan(l, func(s *Scan) { s.PagesFound = max(s.PagesFound, found) })
}

// updateLeasedScan changes the scan of a job the lease still holds.
func (m *Memory) updateLeasedScan(l Lease, change func(*Scan)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.leased(l); err != nil {
		return err
	}
	s, ok := m.scans[l.ScanID]
	if !ok {
		return notFound("scan")
	}
	change(&s)
	m.scans[s.ID] = s
	return nil
}

func (m *Memory) DonePages(ctx context.Context, scanID string) ([]PageKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []PageKey{}
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

func (m *Memory) SavePageResult(ctx context.Context, l Lease, r PageResult) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.leased(l); err != nil {
		return err
	}
	r.ScanID, r.Runs = l.ScanID, max(r.Runs, 1) // as Postgres's decodeResult reads it
	c := clonePageResult(r)
	m.putResult(l.ScanID, PageKey{r.PagePath, r.Strategy}, memResult{result: &c})
	return nil
}

func (m *Memory) SavePageError(ctx context.Context, l Lease, e PageError) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.leased(l); err != nil {
		return err
	}
	k := PageKey{e.PagePath, e.Strategy}
	if old, ok := m.results[l.ScanID][k]; ok && old.result != nil {
		return nil // a result is never replaced by an error
	}
	e.ScanID = l.ScanID
	m.putResult(l.ScanID, k, memResult{err: e})
	return nil
}

func (m *Memory) putResult(scanID string, k PageKey, r memResult) {
	if m.results[scanID] == nil {
		m.results[scanID] = map[PageKey]memResult{}
	}
	m.results[scanID][k] = r
	s := m.scans[scanID]
	s.PagesDone = len(m.results[scanID])
	m.scans[scanID] = s
}

func (m *Memory) CompleteScan(ctx context.Context, l Lease, scores ScanScores, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, err := m.leased(l)
	if err != nil {
		return err
	}
	j.State = JobCompleted
	m.jobs[j.ID] = j
	s := m.scans[l.ScanID]
	s.Status, s.Scores, s.CompletedAt, s.Error = StatusComplete, cloneScores(scores), tp(now), ""
	m.scans[s.ID] = s
	if site, ok := m.sites[s.SiteID]; ok {
		site.HealthScore = cloneScores(scores).Health
		m.sites[site.ID] = site
	}
	return nil
}

func (m *Memory) FailScan(ctx context.Context, l Lease, reason string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, err := m.leased(l)
	if err != nil {
		return err
	}
	m.discard(j, reason, now)
	return nil
}

func (m *Memory) discard(j Job, reason string, now time.Time) {
	j.State, j.LastError = JobDiscarded, reason
	m.jobs[j.ID] = j
	s := m.scans[j.ScanID]
	s.Status, s.Error, s.CompletedAt = StatusFailed, reason, tp(now)
	m.scans[s.ID] = s
}

func (m *Memory) RetryJob(ctx context.Context, l Lease, runAt time.Time, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, err := m.leased(l)
	if err != nil {
		return err
	}
	j.State, j.RunAt, j.LastError, j.LockedBy = JobAvailable, Now(runAt), reason, ""
	m.jobs[j.ID] = j
	return nil
}

func (m *Memory) SnoozeJob(ctx context.Context, l Lease, runAt time.Time, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, err := m.leased(l)
	if err != nil {
		return err
	}
	j.State, j.RunAt, j.LastError, j.LockedBy = JobAvailable, Now(runAt), reason, ""
	j.MaxAttempts++
	m.jobs[j.ID] = j
	return nil
}

func (m *Memory) RescueJobs(ctx context.Context, staleBefore, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, j := range m.jobs {
		if j.State != JobRunning || j.HeartbeatAt == nil || !j.HeartbeatAt.Before(staleBefore) {
			continue
		}
		n++
		if j.Attempt >= j.MaxAttempts {
			m.discard(j, RescueGiveUp, now)
			continue
		}
		// run_at is kept: the job goes back to its place in the queue, ahead of later ones.
		j.State, j.LastError, j.LockedBy = JobAvailable, RescueReason, ""
		m.jobs[j.ID] = j
	}
	return n, nil
}

func (m *Memory) Job(ctx context.Context, id int64) (Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return Job{}, notFound("job")
	}
	j.HeartbeatAt = cloneTime(j.HeartbeatAt)
	return j, nil
}

func (m *Memory) OverdueScans(ctx context.Context, startedBefore time.Time) ([]OverdueScan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	began := func(s Scan) time.Time {
		if s.StartedAt != nil {
			return *s.StartedAt
		}
		return s.CreatedAt
	}
	out := []OverdueScan{}
	for _, j := range m.jobs {
		s := m.scans[j.ScanID]
		if j.Queue != QueueScan || s.Status != StatusQueued && s.Status != StatusRunning || !began(s).Before(startedBefore) {
			continue
		}
		out = append(out, OverdueScan{Scan: cloneScan(s), UserID: m.sites[s.SiteID].UserID, LastError: j.LastError})
	}
	sort.Slice(out, func(a, b int) bool {
		if !began(out[a].Scan).Equal(began(out[b].Scan)) {
			return began(out[a].Scan).Before(began(out[b].Scan))
		}
		return out[a].ID < out[b].ID
	})
	return out, nil
}

func (m *Memory) ExpireScan(ctx context.Context, scanID, reason string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.scans[scanID]
	if s.Status != StatusQueued && s.Status != StatusRunning {
		return notFound("unfinished scan")
	}
	for _, j := range m.jobs {
		if j.ScanID == scanID {
			m.discard(j, reason, now)
			return nil
		}
	}
	return notFound("job")
}

func (m *Memory) EnqueueDueScans(ctx context.Context, now time.Time, limit int) ([]Scan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var due []Site
	for _, s := range m.sites {
		if s.Schedule != ScheduleOff && s.NextScanAt != nil && !s.NextScanAt.After(now) {
			due = append(due, s)
		}
	}
	sort.Slice(due, func(a, b int) bool {
		if !due[a].NextScanAt.Equal(*due[b].NextScanAt) {
			return due[a].NextScanAt.Before(*due[b].NextScanAt)
		}
		return due[a].ID < due[b].ID
	})
	out := []Scan{}
	for _, site := range due[:min(limit, len(due))] {
		sc := Scan{ID: NewID(), SiteID: site.ID, Strategy: StrategyBoth, Trigger: TriggerSchedule, CreatedAt: now}
		switch err := m.enqueue(sc, QueueScan, now); {
		case errors.Is(err, ErrScanActive): // one is in flight: it serves as this period's scan
		case err != nil:
			return nil, err
		default:
			sc.Status, sc.CreatedAt = StatusQueued, Now(now)
			out = append(out, sc)
		}
		site.NextScanAt = NextScanAt(site.Schedule, *site.NextScanAt, now)
		m.sites[site.ID] = site
	}
	return out, nil
}
