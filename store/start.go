package store

import (
	"context"
	"errors"
	"time"
)

// ScanStarter is what starting a scan reads and writes.
type ScanStarter interface {
	ScansOf(ctx context.Context, userID, siteID string, limit int) ([]Scan, error)
	EnqueueScan(ctx context.Context, s Scan, kind string, runAt time.Time) error
}

// InFlight answers whether a scan counts as in flight: queued or running (interface "States").
func (s Scan) InFlight() bool { return s.Status == StatusQueued || s.Status == StatusRunning }

// StartScan is the rule of "Scan now" for the doors that start a scan on someone's behalf and
// answer with it (MCP start_scan, POST /api/external/scans): one scan in flight per site, so a
// site that has one gets it back (started false) and nothing is enqueued; otherwise admit,
// when not nil, may refuse (the workspace's daily audit quota), and sc is enqueued as a scan
// job runnable at now. Of two calls racing, the loser gets the winner's scan. userID reads
// the site's scans, so the caller has already authorized the start.
func StartScan(ctx context.Context, st ScanStarter, userID string, sc Scan, now time.Time, admit func() error) (Scan, bool, error) {
	if active, ok, err := scanInFlight(ctx, st, userID, sc.SiteID); err != nil || ok {
		return active, false, err
	}
	if admit != nil {
		if err := admit(); err != nil {
			return Scan{}, false, err
		}
	}
	err := st.EnqueueScan(ctx, sc, KindScan, now)
	if errors.Is(err, ErrScanActive) {
		active, ok, rerr := scanInFlight(ctx, st, userID, sc.SiteID)
		if rerr == nil && !ok { // the winner already finished: say what happened
			rerr = err
		}
		return active, false, rerr
	}
	if err != nil {
		return Scan{}, false, err
	}
	sc.Status, sc.Pages = StatusQueued, nil
	return sc, true, nil
}

// scanInFlight is the site's queued or running scan, if it has one.
func scanInFlight(ctx context.Context, st ScanStarter, userID, siteID string) (Scan, bool, error) {
	scans, err := st.ScansOf(ctx, userID, siteID, 1)
	if err != nil || len(scans) == 0 || !scans[0].InFlight() {
		return Scan{}, false, err
	}
	return scans[0], true, nil
}
