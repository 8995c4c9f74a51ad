package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"sitepulse/handlers/ci"
	"sitepulse/oauth"
	"sitepulse/store"
)

// CIStore is what CI pipelines reach with an API key beside the budget check's hot path:
// starting and following scans (POST /api/external/scans, GET /api/external/scans/{scanId}),
// and the budget check of a given scan, waited for and answered in the pipelines' formats.
type CIStore interface {
	store.ScanStarter // ScansOf, EnqueueScan: the rules of Scan now
	Scan(ctx context.Context, userID, scanID string) (store.Scan, error)
	CompletedScans(ctx context.Context, userID, siteID string, limit int) ([]store.Scan, error)
	ci.Store // what a verdict reads
	RecordPublish(ctx context.Context, p store.Publish) error
	Publishes(ctx context.Context, userID, siteID string, since time.Time, limit int) ([]store.Publish, error)
	MarkPublished(ctx context.Context, siteID string, at time.Time) error
	// ScansByID serves the waits (system: each wait was authorized when it began).
	ScansByID(ctx context.Context, ids []string) (map[string]store.Scan, error)
}

// ScanQuota is the workspaces' daily audit budget (USER_DAILY_AUDITS) a pipeline's scan is
// admitted under, as MCP's start_scan is: Check answers why the workspace's scans wait, or nil.
type ScanQuota interface {
	Check(workspaceID string, now time.Time) error
}

// scanStatusOf is sc as the CI endpoints show it.
func (s *server) scanStatusOf(sc store.Scan) ci.ScanStatus {
	st := ci.ScanStatus{ScanID: sc.ID, SiteID: sc.SiteID, Status: sc.Status, Strategy: sc.Strategy, Trigger: sc.Trigger,
		PagesDone: sc.PagesDone, PagesTotal: sc.PagesTotal, CreatedAt: sc.CreatedAt, StartedAt: sc.StartedAt,
		CompletedAt: sc.CompletedAt, URL: s.scanURL(sc.SiteID, sc.ID), StatusURL: s.BaseURL + "/api/external/scans/" + sc.ID}
	if sc.Status == store.StatusFailed {
		reason := sc.Error
		st.Reason = &reason
	}
	return st
}

// scanURL is a scan's page in the web UI: what a commit status links to.
func (s *server) scanURL(siteID, scanID string) string {
	return s.BaseURL + "/sites/" + siteID + "/scans/" + scanID
}

// startedScan is the 202 answer of POST /api/external/scans.
type startedScan struct {
	ci.ScanStatus
	// AlreadyRunning says the site had a scan in flight, answered instead of a new one (one
	// scan in flight per site): it started before this call, so the deploy may not be in it.
	AlreadyRunning bool `json:"alreadyRunning"`
}

// Limits of what a pipeline may send with a scan.
const maxPublishedBy = 100 // characters, as store.Publish keeps

// scanRequest is the body of POST /api/external/scans, read loosely so that every field's
// problem is a 422 of its own.
type scanRequest struct {
	SiteID      json.RawMessage `json:"siteId"`
	Pages       json.RawMessage `json:"pages"`
	Strategy    json.RawMessage `json:"strategy"`
	PublishedBy json.RawMessage `json:"publishedBy"`
	Commit      json.RawMessage `json:"commit"`
}

// validScanRequest is a scanRequest that passed its rules.
type validScanRequest struct {
	siteID, publishedBy, commit string
	pages                       []string
	strategy                    store.Strategy
}

// validate reads a scanRequest, or says per field what is wrong.
func (req scanRequest) validate(rules store.SiteRules) (validScanRequest, map[string][]string) {
	var v validScanRequest
	problems := map[string][]string{}
	var problem string
	if v.siteID, problem = uuidField(req.SiteID); problem != "" {
		problems["siteId"] = []string{problem}
	}
	v.strategy = store.StrategyBoth
	if present(req.Strategy) {
		var s string
		if json.Unmarshal(req.Strategy, &s) != nil || !store.Strategy(s).Valid() {
			problems["strategy"] = []string{"Expected mobile, desktop or both"}
		}
		v.strategy = store.Strategy(s)
	}
	if present(req.Pages) {
		var pages []string
		if json.Unmarshal(req.Pages, &pages) != nil {
			problems["pages"] = []string{"Expected an array of page paths, such as [\"/\", \"/pricing\"]"}
		} else if valid, err := store.ValidPages(pages, rules); err != nil {
			problems["pages"] = []string{store.InvalidMessage(err)}
		} else {
			v.pages = valid
		}
	}
	if present(req.PublishedBy) {
		if json.Unmarshal(req.PublishedBy, &v.publishedBy) != nil {
			problems["publishedBy"] = []string{"Expected a string"}
		} else if p := store.DisplayTextProblem(v.publishedBy); p != "" || utf8.RuneCountInString(v.publishedBy) > maxPublishedBy {
			problems["publishedBy"] = []string{fmt.Sprintf("Expected a name of at most %d characters without control or invisible characters", maxPublishedBy)}
		}
	}
	if present(req.Commit) {
		if json.Unmarshal(req.Commit, &v.commit) != nil || !store.ValidCommit(v.commit) {
			problems["commit"] = []string{"Expected a git commit id: 7 to 64 hexadecimal digits"}
		}
	}
	return v, problems
}

// present says whether an optional JSON field was given a value other than null.
func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// handleStartScan starts a scan of a site for a CI pipeline (POST /api/external/scans) under the
// rules of Scan now: a site with a scan in flight gets that scan back (alreadyRunning), and a
// workspace whose daily audits are spent gets 429 until they renew. The API key must be
// allowed to start scans (its "may publish reports and start scans", mcp:write) and act in the
// site's workspace with a role that may (owner or editor): else 403; a site outside its
// workspace is 404. The commit and who published are recorded as a publish of the site.
func (s *server) handleStartScan() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		p := store.PrincipalFrom(ctx)
		var req scanRequest
		if err := decodeJSON(r, &req); err != nil {
			writeDecodeError(w, err)
			return
		}
		v, problems := req.validate(s.SiteRules)
		if len(problems) > 0 {
			writeValidation(w, problems)
			return
		}
		site, err := s.keySite(ctx, v.siteID, store.ActScan)
		if errors.Is(err, store.ErrForbidden) {
			writeError(w, http.StatusForbidden, "this API key may not start scans. It needs \"may publish reports and start scans\" (mcp:write, Settings → API keys), and its owner the owner or editor role in the site's workspace")
			return
		}
		if err != nil {
			s.error(w, r, err, "site not found")
			return
		}
		now := s.Now()
		sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Status: store.StatusQueued, Strategy: v.strategy,
			Trigger: store.TriggerAPI, CreatedAt: now, Pages: v.pages}
		admit := func() error {
			if s.Quota == nil {
				return nil
			}
			return s.Quota.Check(site.WorkspaceID, now)
		}
		got, started, err := store.StartScan(ctx, s.CI, p.UserID, sc, now, admit)
		var wait interface{ RetryAt() time.Time }
		if errors.As(err, &wait) {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait.RetryAt(), now)))
			writeError(w, http.StatusTooManyRequests, "Cannot start a scan now: "+err.Error()+". Retry after that time; the budget check still judges the last completed scan.")
			return
		}
		if err != nil {
			s.error(w, r, err, "site not found")
			return
		}
		if started {
			s.Log.Info("scan enqueued", "site", site.ID, "scan", got.ID, "trigger", store.TriggerAPI, "key_workspace", p.KeyWorkspaceID, "pages", len(v.pages))
		}
		if v.publishedBy != "" || v.commit != "" {
			s.recordDeploy(ctx, p.UserID, site.ID, v, now, got.ID, started)
		}
		w.Header().Set("Location", s.BaseURL+"/api/external/scans/"+got.ID)
		w.Header().Set("Cache-Control", "no-store")
		oauth.WriteJSON(w, http.StatusAccepted, startedScan{ScanStatus: s.scanStatusOf(got), AlreadyRunning: !started})
	})
}

// recordDeploy keeps a pipeline's deploy as a publish of the site: who published and the commit,
// linked to the scan it started (not to a scan that was already running: that one began before
// the deploy). A call that got the running scan and names the same deploy as the site's latest
// publish (a retry, or a loop) adds nothing. As for the platform's publishes, a failure here is
// logged, not answered: the scan is started either way.
func (s *server) recordDeploy(ctx context.Context, userID, siteID string, v validScanRequest, now time.Time, scanID string, started bool) {
	pub := store.Publish{ID: store.NewID(), SiteID: siteID, PublishedBy: v.publishedBy, PublishedOn: now, Commit: v.commit}
	if started {
		pub.ScanID = scanID
	} else {
		latest, err := s.CI.Publishes(ctx, userID, siteID, time.Time{}, 1)
		if err == nil && len(latest) == 1 && latest[0].PublishedBy == v.publishedBy && latest[0].Commit == strings.ToLower(v.commit) {
			return
		}
	}
	if err := s.CI.RecordPublish(ctx, pub); err != nil {
		s.Log.Warn("CI scan: could not record the deploy", "site", siteID, "err", err)
		return
	}
	if err := s.CI.MarkPublished(ctx, siteID, now); err != nil {
		s.Log.Warn("CI scan: could not mark the site published", "site", siteID, "err", err)
	}
}

// handleScanStatus is GET /api/external/scans/{scanId}: a scan of the key's workspace, with
// its status and progress; any other id is 404.
func (s *server) handleScanStatus() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sc, err := s.keyScan(r.Context(), r.PathValue("scanId"))
		if err != nil {
			s.error(w, r, err, "scan not found")
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		oauth.WriteJSON(w, http.StatusOK, s.scanStatusOf(sc))
	})
}

// keySite reads a site for the request's principal (an API key, which acts in its own
// workspace only) and asks whether it may do a there: store.ErrNotFound for a site outside its
// reach, store.ErrForbidden when its permission or its user's role does not allow a.
func (s *server) keySite(ctx context.Context, siteID string, a store.Action) (store.Site, error) {
	site, err := s.Auth.Site(ctx, store.UserIDFrom(ctx), siteID)
	if err != nil {
		return site, err
	}
	_, err = s.authorize(ctx, site.WorkspaceID, a)
	return site, err
}

// keyScan reads a scan of the principal's reach by the id as written; anything else, a
// malformed id included, is store.ErrNotFound.
func (s *server) keyScan(ctx context.Context, rawID string) (store.Scan, error) {
	id := store.CanonicalID(rawID)
	if !store.ValidUUID(id) {
		return store.Scan{}, store.NotFound("scan")
	}
	sc, err := s.CI.Scan(ctx, store.UserIDFrom(ctx), id)
	if err != nil {
		return sc, err
	}
	if _, err := s.keySite(ctx, sc.SiteID, store.ActRead); err != nil {
		return store.Scan{}, err
	}
	return sc, nil
}

// retryAfter is a Retry-After in whole seconds until at, at least 1.
func retryAfter(at, now time.Time) int {
	return max(1, int(at.Sub(now).Seconds()+0.999))
}
