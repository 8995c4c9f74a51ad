package handlers

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"sitepulse/handlers/ci"
	"sitepulse/oauth"
	"sitepulse/store"
)

// maxWaitSeconds bounds a budget check's wait: a pipeline that needs longer asks again.
const maxWaitSeconds = 600

// budgetRequest is the body of POST /api/external/budget-check: the interface's siteId, and
// the CI parameters scanId (judge that scan, which must be the site's), waitSeconds (wait up
// to that long for it, or for the site's running scan, to finish) and format (as the query's,
// ci.FormatOf).
type budgetRequest struct {
	SiteID      json.RawMessage `json:"siteId"`
	ScanID      json.RawMessage `json:"scanId"`
	WaitSeconds json.RawMessage `json:"waitSeconds"`
	Format      json.RawMessage `json:"format"`
	// FieldBudgets, when given, also checks real users' p75 (field_budget.go); without it the
	// answer is the interface's, byte for byte.
	FieldBudgets json.RawMessage `json:"fieldBudgets"`
}

// validate reads the CI parameters, or says per field what is wrong (formatProblem is the
// format parameter's, from ci.FormatOf).
func (req budgetRequest) validate(formatProblem string) (scanID string, wait time.Duration, problems map[string][]string) {
	problems = map[string][]string{}
	if present(req.ScanID) {
		var problem string
		if scanID, problem = uuidField(req.ScanID); problem != "" {
			problems["scanId"] = []string{problem}
		}
	}
	if present(req.WaitSeconds) {
		var n float64
		if json.Unmarshal(req.WaitSeconds, &n) != nil || n < 0 || n > maxWaitSeconds || n != math.Trunc(n) {
			problems["waitSeconds"] = []string{"Expected a whole number of seconds from 0 to " + strconv.Itoa(maxWaitSeconds)}
		}
		wait = time.Duration(n) * time.Second
	}
	if formatProblem != "" {
		problems["format"] = []string{formatProblem}
	}
	return scanID, wait, problems
}

// judgeBudgets answers a CI pipeline's budget check: the key authenticated as for the plain
// check, then scan scanId of the site (404 when it is not the site's, as for a foreign id), or
// without it the site's scan in flight when the request waits, else its latest completed scan.
// A scan still queued or running is waited for up to waitSeconds: the answer comes when it
// finishes, or 202 with its status when the wait runs out or the process shuts down (retry
// then). A finished scan is judged (ci.Judge) and answered 200 in the asked format.
func (s *server) judgeBudgets(w http.ResponseWriter, r *http.Request, token, siteID, format, formatProblem string, req budgetRequest) {
	ctx := r.Context()
	principal, _, err := s.authenticate(r, apiKeyOnly, token)
	if err != nil {
		s.bearerFailure(w, r, apiKeyOnly, err)
		return
	}
	ctx = store.WithPrincipal(ctx, principal)
	scanID, wait, problems := req.validate(formatProblem)
	if len(problems) > 0 {
		writeValidation(w, problems)
		return
	}
	site, err := s.keySite(ctx, siteID, store.ActRead)
	if err != nil {
		s.error(w, r, err, "site not found")
		return
	}
	uid := principal.UserID
	var target *store.Scan
	switch {
	case scanID != "":
		sc, err := s.CI.Scan(ctx, uid, scanID)
		if err == nil && sc.SiteID != site.ID {
			err = store.NotFound("scan of the site")
		}
		if err != nil {
			s.error(w, r, err, "scan not found")
			return
		}
		target = &sc
	default:
		if wait > 0 {
			scans, err := s.CI.ScansOf(ctx, uid, site.ID, 1)
			if err != nil {
				s.error(w, r, err, "site not found")
				return
			}
			if len(scans) > 0 && scans[0].InFlight() {
				target = &scans[0]
			}
		}
		if target == nil {
			scans, err := s.CI.CompletedScans(ctx, uid, site.ID, 1)
			if err != nil {
				s.error(w, r, err, "site not found")
				return
			}
			if len(scans) > 0 {
				target = &scans[0]
			}
		}
	}
	if target != nil && target.InFlight() {
		sc, finished, err := s.waitForScan(w, r, uid, *target, site.WorkspaceID, wait)
		var limit waitLimitError
		switch {
		case errors.As(err, &limit):
			w.Header().Set("Retry-After", "10")
			writeError(w, http.StatusTooManyRequests, limit.Error()+"; retry in a few seconds")
			return
		case err != nil:
			s.error(w, r, err, "scan not found")
			return
		case !finished:
			s.writeNotYet(w, r, format, site, sc)
			return
		}
		target = &sc
	}
	v, err := ci.Judge(ctx, s.CI, uid, site, target, s.scanURL)
	if err != nil {
		s.error(w, r, err, "site not found")
		return
	}
	s.writeVerdict(w, r, format, v)
}

// waitForScan holds the request until sc finishes, up to wait, without a goroutine of its own:
// it parks in s.waiters. It answers the finished scan, or (finished false) the scan as it
// stands when the wait runs out or the process begins shutting down, re-read for the answer.
// A client that goes away ends the wait.
func (s *server) waitForScan(w http.ResponseWriter, r *http.Request, userID string, sc store.Scan, workspace string, wait time.Duration) (store.Scan, bool, error) {
	ctx := r.Context()
	if wait <= 0 {
		return sc, false, nil
	}
	waiter, err := s.waiters.add(sc.ID, workspace, userID)
	if err != nil {
		return sc, false, err
	}
	defer s.waiters.remove(waiter)
	// The server's read and write timeouts are shorter than a wait: this request's run to its end.
	rc := http.NewResponseController(w)
	deadline := time.Now().Add(wait + 30*time.Second)
	_ = rc.SetReadDeadline(deadline)
	_ = rc.SetWriteDeadline(deadline)
	timeout, stop := s.NewTimer(wait)
	defer stop()
	select {
	case done := <-waiter.done:
		if done.ID == "" { // deleted with its site meanwhile
			return sc, false, store.NotFound("scan")
		}
		return done, true, nil
	case <-timeout:
	case <-s.Stopping:
		w.Header().Set("Retry-After", "5")
	case <-ctx.Done():
		return sc, false, ctx.Err()
	}
	now, err := s.CI.Scan(ctx, userID, sc.ID)
	if err != nil {
		return sc, false, err
	}
	return now, now.Status.Terminal(), nil
}

// writeVerdict answers a judged (or unjudgeable) check, 200, in its format.
func (s *server) writeVerdict(w http.ResponseWriter, r *http.Request, format string, v ci.Verdict) {
	s.writeFormat(w, r, http.StatusOK, format, v, func() string { return ci.Markdown(v) }, func() ([]byte, error) { return ci.JUnit(v) })
}

// writeNotYet answers 202 with the status of a scan the wait did not see finish, in the
// format asked.
func (s *server) writeNotYet(w http.ResponseWriter, r *http.Request, format string, site store.Site, sc store.Scan) {
	st := s.scanStatusOf(sc)
	w.Header().Set("Location", st.StatusURL)
	s.writeFormat(w, r, http.StatusAccepted, format, st, func() string { return ci.NotYetMarkdown(site.Name, st) },
		func() ([]byte, error) { return ci.NotYetJUnit(site.Name, st) })
}

// writeFormat writes an answer of the budget check in its format: v as JSON, or what md or
// junit make of it.
func (s *server) writeFormat(w http.ResponseWriter, r *http.Request, status int, format string, v any, md func() string, junit func() ([]byte, error)) {
	w.Header().Set("Cache-Control", "no-store")
	var body []byte
	switch format {
	case ci.FormatMarkdown:
		w.Header().Set("Content-Type", ci.MarkdownType)
		body = []byte(md())
	case ci.FormatJUnit:
		b, err := junit()
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		w.Header().Set("Content-Type", ci.JUnitType)
		body = b
	default:
		oauth.WriteJSON(w, status, v)
		return
	}
	w.WriteHeader(status)
	w.Write(body)
}
