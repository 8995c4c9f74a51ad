package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	"sitepulse/handlers/svg"
	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// ScanStore is what the scan page, its progress stream and the page detail read of one scan.
type ScanStore interface {
	Scan(ctx context.Context, userID, scanID string) (store.Scan, error)
	ScanWait(ctx context.Context, userID, scanID string) (store.ScanWait, error)
	PageErrors(ctx context.Context, userID, scanID string) ([]store.PageError, error)
	PageMetrics(ctx context.Context, userID, scanID string) ([]store.PageResult, error)
	PageResult(ctx context.Context, userID, scanID, pagePath string, strategy store.Strategy) (store.PageResult, error)
	PublishesOfScans(ctx context.Context, userID string, scanIDs []string) (map[string]store.Publish, error)
	// PageImage serves the scan's screenshots (images.go).
	PageImage(ctx context.Context, userID, scanID, pagePath string, strategy store.Strategy, index int) (store.PageImage, error)
	// What changed (compare.go): the runs of two scans, their pictures, the site's completed
	// scans to compare with.
	PageImages(ctx context.Context, userID, scanID, pagePath string, strategy store.Strategy) ([]store.PageImage, error)
	PreviousPairs(ctx context.Context, userID, scanID string) (store.ScanPairs, error)
	ComparePairs(ctx context.Context, userID, fromScanID, toScanID string) (store.ScanPairs, error)
	CompletedScans(ctx context.Context, userID, siteID string, limit int) ([]store.Scan, error)
}

// defaultScanPoll is how often the scan progress stream reads the scan (interface: every 2 s).
const defaultScanPoll = 2 * time.Second

// ownScan loads a site and one of its scans from the path for the signed-in user, answering 404
// itself when either is missing, someone else's, or the scan belongs to another site.
func (s *server) ownScan(w http.ResponseWriter, r *http.Request) (store.Site, store.Scan, bool) {
	site, ok := s.ownSite(w, r)
	if !ok {
		return site, store.Scan{}, false
	}
	id := store.CanonicalID(r.PathValue("scanId"))
	var scan store.Scan
	err := store.ErrNotFound
	if store.ValidUUID(id) {
		scan, err = s.Scans.Scan(r.Context(), visitorFrom(r.Context()).User.ID, id)
	}
	if err == nil && scan.SiteID != site.ID {
		err = store.ErrNotFound
	}
	if err != nil {
		s.error(w, r, err, "There is no such scan for this site.")
		return site, scan, false
	}
	return site, scan, true
}

// scanPageData is the scan page.
type scanPageData struct {
	Site     store.Site
	Scan     store.Scan
	Publish  *store.Publish // the publish that started the scan; nil when none did
	Terminal bool
	Replay   bool      // the site's audits are replayed from recorded runs (the demo)
	Wait     *scanWait // why an unfinished scan waits for its next attempt; nil when it does not
	Results  []store.PageResult
	Errors   []errorGroup // failed audits, identical errors told once
	Progress progress
	Scores   []strategyView
	// RetentionDays is the workspace's retention, which a pruned scan's page names.
	RetentionDays int
	// Changes explain a completed scan's regressions against Previous, the site's previous
	// completed scan (nil when none); Completed are the site's completed scans to compare
	// with.
	Changes   []changePanel
	Regressed regressedCount // pages and runs that regressed, Changes or not
	Previous  *store.Scan
	Completed []store.Scan
	Field     fieldPanel // the site's field beside this scan, and whether users felt its regressions
}

// progress is how far a scan is: audits done (with a result), failed, in all, and in flight
// (a running scan's, as its worker last wrote them).
type progress struct {
	Done, Failed, Total, InFlight int
}

func newProgress(scan store.Scan, failed int) progress {
	p := progress{Done: scan.PagesDone - failed, Failed: failed, Total: scan.PagesTotal}
	if scan.Status == store.StatusRunning {
		p.InFlight = scan.AuditsInFlight
	}
	return p
}

// Line says the counts: "4 done, 6 failed of 10 audits", or "4 of 10 audits done" with no
// failure, then " · 8 in flight" while audits are.
func (p progress) Line() string {
	line := strconv.Itoa(p.Done) + " of " + strconv.Itoa(p.Total) + " audits done"
	if p.Failed > 0 {
		line = strconv.Itoa(p.Done) + " done, " + strconv.Itoa(p.Failed) + " failed of " + strconv.Itoa(p.Total) + " audits"
	}
	if p.InFlight > 0 {
		line += " · " + strconv.Itoa(p.InFlight) + " in flight"
	}
	return line
}

func (s *server) handleScan() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, scan, ok := s.ownScan(w, r)
		if !ok {
			return
		}
		uid := visitorFrom(r.Context()).User.ID
		d := scanPageData{Site: site, Scan: scan, Terminal: scan.Status.Terminal(), Replay: s.Replayed(site)}
		var err error
		// The pages table and the summaries read only scores and vitals: PageMetrics, as on the
		// site page, skips decoding every audit of the scan.
		if d.Results, err = s.Scans.PageMetrics(r.Context(), uid, scan.ID); err != nil {
			s.error(w, r, err, "")
			return
		}
		errs, err := s.Scans.PageErrors(r.Context(), uid, scan.ID)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		d.Errors, d.Progress = groupAuditErrors(errs), newProgress(scan, len(errs))
		if !d.Terminal {
			if d.Wait, err = s.scanWait(r.Context(), uid, scan.ID); err != nil {
				s.error(w, r, err, "")
				return
			}
		}
		d.Scores, d.RetentionDays = strategySummaries(d.Results), workspaceFrom(r.Context()).RetentionDays
		if scan.Summary != nil { // completed: its summary stays when retention prunes its pages
			d.Scores = strategyViews(*scan.Summary)
		}
		pubs, err := s.Scans.PublishesOfScans(r.Context(), uid, []string{scan.ID})
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		if p, ok := pubs[scan.ID]; ok {
			d.Publish = &p
		}
		if scan.Status == store.StatusComplete {
			if d.Changes, d.Previous, d.Regressed, err = s.regressedPanels(r.Context(), uid, site, scan); err != nil {
				s.error(w, r, err, "")
				return
			}
			if d.Completed, err = s.Scans.CompletedScans(r.Context(), uid, site.ID, maxCompareScans); err != nil {
				s.error(w, r, err, "")
				return
			}
			in := fieldInput{LabLatest: map[string]*float64{}, PageURLs: map[string]string{}, Publish: d.Publish}
			for _, c := range d.Changes {
				in.Regressions = append(in.Regressions, c.Regressions...)
			}
			for _, res := range d.Results {
				in.PageURLs[res.PagePath] = res.PageURL
			}
			if scan.Summary != nil {
				for _, m := range svg.FieldMetricsShown {
					in.LabLatest[m] = scan.Summary.SiteVital(m)
				}
			}
			if d.Publish != nil {
				in.Publishes = []store.Publish{*d.Publish}
			}
			if d.Field, err = s.fieldPanelOf(r.Context(), uid, site, in); err != nil {
				s.error(w, r, err, "")
				return
			}
		}
		s.render(w, r, http.StatusOK, "scan", page{Title: "Scan of " + site.Name, Flash: uiFlash(r), Data: d})
	})
}

// scanEvent is the payload of a `status` event, plus the audits in flight of a running scan
// and, while the scan waits for its next attempt, why and until when.
type scanEvent struct {
	ScanID         string           `json:"scanId"`
	Status         store.ScanStatus `json:"status"`
	PagesDone      int              `json:"pagesDone"` // with a result or an error
	PagesFailed    int              `json:"pagesFailed"`
	PagesTotal     int              `json:"pagesTotal"`
	AuditsInFlight int              `json:"auditsInFlight"` // of a running scan
	Progress       string           `json:"progress"`       // the counts in words (progress.Line)
	Waiting        *scanWait        `json:"waiting,omitempty"`
	// Message ends a stream whose scan went away: status "deleted", "This site was deleted".
	Message string `json:"message,omitempty"`
}

// scanDeleted is the stream's last event when the scan's site was deleted while it was open.
const scanDeleted store.ScanStatus = "deleted"

// scanWait is why an unfinished scan waits: its last attempt failed, PSI is paused (the
// breaker), or its worker shut down, and when it runs again.
type scanWait struct {
	Reason string    `json:"reason"`
	RunAt  time.Time `json:"runAt"`
}

// scanWait reads the wait of a scan; nil when it is not waiting.
func (s *server) scanWait(ctx context.Context, userID, scanID string) (*scanWait, error) {
	w, err := s.Scans.ScanWait(ctx, userID, scanID)
	if err != nil || w.Reason == "" {
		return nil, err
	}
	return &scanWait{Reason: w.Reason, RunAt: w.RunAt}, nil
}

// handleScanEvents streams a scan's progress as server-sent events: an event `status` at once
// and then every poll interval, ending after a terminal status (complete or failed). The status
// comes from the scan's shared poller (scanHub), within the caps on live streams. The server's
// WriteTimeout would cut a long stream, so each write first pushes the deadline out.
func (s *server) handleScanEvents() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, scan, ok := s.ownScan(w, r)
		if !ok {
			return
		}
		v := visitorFrom(r.Context())
		sub, refused := s.scanFeeds.subscribe(v.Session.TokenHash, v.User.ID, scan.ID)
		if sub == nil {
			w.Header().Set("Retry-After", "60")
			s.renderError(w, r, http.StatusTooManyRequests, refused)
			return
		}
		defer sub.Close()
		rc := http.NewResponseController(w)
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		for {
			_ = rc.SetWriteDeadline(time.Now().Add(s.scanFeeds.every + 30*time.Second))
			if err := rc.Flush(); err != nil {
				return
			}
			var ev scanEvent
			select {
			case <-r.Context().Done():
				return
			case <-s.Stopping:
				return // draining: the page's script reconnects, to another process
			case e, ok := <-sub.C:
				if !ok {
					return // the store failed; the page's script reconnects
				}
				ev = e
			}
			b, _ := json.Marshal(ev)
			if _, err := fmt.Fprintf(w, "event: status\ndata: %s\n\n", b); err != nil {
				return
			}
			if ev.Status.Terminal() || ev.Status == scanDeleted {
				_ = rc.Flush()
				return
			}
		}
	})
}

// pageDetailData is the drill-down into one page and strategy of a scan.
type pageDetailData struct {
	Site        store.Site
	Scan        store.Scan
	Result      store.PageResult
	A11y        []analysis.A11yGroup
	ThirdParty  []store.ThirdParty
	Opportunity []store.Opportunity
	Other       store.Strategy // the other strategy, when the scan has it
	Field       fieldPanel     // what real users measured on this page
}

func (s *server) handlePageDetail() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, scan, ok := s.ownScan(w, r)
		if !ok {
			return
		}
		path, strategy, ok := pageQuery(r)
		if !ok {
			s.renderError(w, r, http.StatusNotFound, "This scan has no result for that page.")
			return
		}
		uid := visitorFrom(r.Context()).User.ID
		res, err := s.Scans.PageResult(r.Context(), uid, scan.ID, path, strategy)
		if errors.Is(err, store.ErrNotFound) && scan.DetailsPrunedAt != nil {
			s.renderError(w, r, http.StatusGone, prunedMessage(scan)+" Its scores are on the scan's page.")
			return
		}
		if err != nil {
			s.error(w, r, err, "This scan has no result for that page.")
			return
		}
		d := pageDetailData{Site: site, Scan: scan, Result: res}
		d.A11y = analysis.AccessibilityIssues([]store.PageResult{res}, "all").Issues
		d.ThirdParty = append([]store.ThirdParty(nil), res.ThirdPartyScripts...)
		sort.SliceStable(d.ThirdParty, func(i, j int) bool { return d.ThirdParty[i].BlockingTime > d.ThirdParty[j].BlockingTime })
		d.Opportunity = append([]store.Opportunity(nil), res.Opportunities...)
		sort.SliceStable(d.Opportunity, func(i, j int) bool { return d.Opportunity[i].SavingsMs > d.Opportunity[j].SavingsMs })
		other := store.StrategyDesktop
		if strategy == store.StrategyDesktop {
			other = store.StrategyMobile
		}
		if _, err := s.Scans.PageResult(r.Context(), uid, scan.ID, path, other); err == nil {
			d.Other = other
		}
		in := fieldInput{Page: res.PageURL, Lab: map[string][]svg.LabPoint{}, LabLatest: map[string]*float64{}}
		pubs, err := s.Scans.PublishesOfScans(r.Context(), uid, []string{scan.ID})
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		if p, ok := pubs[scan.ID]; ok { // the publish that started the scan, marked on the field trend
			in.Publishes = []store.Publish{p}
		}
		for _, m := range svg.FieldMetricsShown {
			v := analysis.VitalOf(res.CoreWebVitals, m)
			in.LabLatest[m] = v
			if scan.CompletedAt != nil {
				in.Lab[m] = []svg.LabPoint{{At: *scan.CompletedAt, Value: v}}
			}
		}
		if d.Field, err = s.fieldPanelOf(r.Context(), uid, site, in); err != nil {
			s.error(w, r, err, "")
			return
		}
		s.render(w, r, http.StatusOK, "page_detail", page{Title: path + " · " + site.Name, Data: d})
	})
}

// prunedMessage says that a scan's page details were removed by retention (issue 25): the page
// detail, the export and a client report made before say so rather than show empty tables.
func prunedMessage(scan store.Scan) string {
	return "This scan's page details were removed on " + scan.DetailsPrunedAt.UTC().Format("2 Jan 2006") +
		" by the workspace's retention setting."
}
