package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"sitepulse/oauth"
	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
)

// RunnerStore is what the runner protocol and the runner settings need of the store
// (docs/runners.md): runner tokens, the audits leased to runners, a site's locations.
type RunnerStore interface {
	CreateRunnerToken(ctx context.Context, t store.RunnerToken) error
	RunnerTokens(ctx context.Context, workspaceID string) ([]store.RunnerToken, error)
	RevokeRunnerToken(ctx context.Context, workspaceID, tokenID string, now time.Time) error
	RunnerTokenByHash(ctx context.Context, hash string) (store.RunnerToken, error)
	SetSiteLocations(ctx context.Context, siteID string, locations []string) error
	SiteLocations(ctx context.Context, siteID string) ([]string, error)
	LeaseRunnerAudit(ctx context.Context, t store.RunnerToken, runner, location string, now, until time.Time) (store.RunnerAudit, error)
	ExtendRunnerLease(ctx context.Context, t store.RunnerToken, leaseID string, now, until time.Time) error
	FinishRunnerAudit(ctx context.Context, t store.RunnerToken, leaseID string, f store.RunnerFinish, now time.Time) error
}

// prefixRunnerToken starts every runner token.
const prefixRunnerToken = "rnr_"

// DefaultRunnerLease is how long a lease lasts without a heartbeat (RUNNER_LEASE_SECONDS).
const DefaultRunnerLease = 2 * time.Minute

// maxRunnerReport caps a posted Lighthouse report, as the local backend caps the CLI's.
const maxRunnerReport = 64 << 20

// maxRunnerLabel caps a runner's name and location label, and a site's locations.
const maxRunnerLabel = 64

// isRunnerResult answers whether path is a runner's result post, whose body is a report.
func isRunnerResult(path string) bool {
	return strings.HasPrefix(path, "/api/runner/leases/") && strings.HasSuffix(path, "/result")
}

type runnerKey struct{}

// runnerFrom is the token requireRunner verified.
func runnerFrom(ctx context.Context) store.RunnerToken {
	t, _ := ctx.Value(runnerKey{}).(store.RunnerToken)
	return t
}

// requireRunner authenticates a runner by its token (Authorization: Bearer rnr_...), looked up
// by its hash. An unknown or revoked token is 401: the runner stops at its next call.
func (s *server) requireRunner(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Runners == nil {
			writeError(w, http.StatusNotFound, "runners are not available on this service")
			return
		}
		token := bearerToken(r)
		if !strings.HasPrefix(token, prefixRunnerToken) || len(token) > maxBearerLen {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sitepulse"`)
			writeError(w, http.StatusUnauthorized, "missing runner token: send Authorization: Bearer rnr_...")
			return
		}
		t, err := s.Runners.RunnerTokenByHash(r.Context(), store.HashSecret(token))
		if errors.Is(err, store.ErrNotFound) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sitepulse", error="invalid_token"`)
			writeError(w, http.StatusUnauthorized, "runner token unknown or revoked: this runner stops")
			return
		}
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), runnerKey{}, t)))
	})
}

func (s *server) runnerLease() time.Duration {
	if s.RunnerLease > 0 {
		return s.RunnerLease
	}
	return DefaultRunnerLease
}

// validLabel answers whether a runner's name or location label is short, printable text.
func validLabel(v string) bool {
	return len(v) <= maxRunnerLabel && strings.IndexFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// leaseResponse is one leased audit, as the runner reads it.
type leaseResponse struct {
	LeaseID          string         `json:"leaseId"`
	URL              string         `json:"url"`
	Strategy         store.Strategy `json:"strategy"`
	LeaseUntil       time.Time      `json:"leaseUntil"`
	HeartbeatSeconds int            `json:"heartbeatSeconds"`
}

// handleRunnerLease hands the runner one audit of its workspace (any workspace for an
// operator's token) with a lease, or 204 when there is none.
func (s *server) handleRunnerLease() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Runner   string `json:"runner"`
			Location string `json:"location"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&in); err != nil {
			writeError(w, http.StatusBadRequest, "send JSON: {\"runner\": name, \"location\": label}")
			return
		}
		in.Runner, in.Location = strings.TrimSpace(in.Runner), strings.TrimSpace(in.Location)
		if in.Runner == "" || !validLabel(in.Runner) || !validLabel(in.Location) {
			writeValidation(w, map[string][]string{"runner": {"a name of 1 to 64 printable characters"}, "location": {"a label of at most 64 printable characters"}})
			return
		}
		now := s.Now()
		a, err := s.Runners.LeaseRunnerAudit(r.Context(), runnerFrom(r.Context()), in.Runner, in.Location, now, now.Add(s.runnerLease()))
		if errors.Is(err, store.ErrNotFound) {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		oauth.WriteJSON(w, http.StatusOK, leaseResponse{LeaseID: a.LeaseID, URL: a.PageURL, Strategy: a.Strategy, LeaseUntil: a.LeaseUntil.UTC(),
			HeartbeatSeconds: max(1, int(s.runnerLease().Seconds())/3)})
	})
}

// leaseGone answers a heartbeat or result for a lease the runner does not hold now.
func leaseGone(w http.ResponseWriter) {
	writeError(w, http.StatusGone, "this lease expired or is not this runner's: the audit is another runner's now; lease again")
}

// handleRunnerHeartbeat extends the runner's lease.
func (s *server) handleRunnerHeartbeat() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := s.Now()
		until := now.Add(s.runnerLease())
		err := s.Runners.ExtendRunnerLease(r.Context(), runnerFrom(r.Context()), store.CanonicalID(r.PathValue("leaseId")), now, until)
		switch {
		case errors.Is(err, store.ErrGone):
			leaseGone(w)
		case err != nil:
			s.error(w, r, err, "")
		default:
			oauth.WriteJSON(w, http.StatusOK, map[string]any{"leaseUntil": until.UTC()})
		}
	})
}

// handleRunnerResult takes the runner's Lighthouse JSON report (or the page's error) for its
// lease. The report is checked on arrival by the extraction the local backend uses
// (lighthouse.ExtractLighthouse): one that holds no result is 422. The scan's worker extracts
// it again into the result it stores, so a runner can set nothing the report does not say;
// and it can post only to a lease it holds, which is of an audit of its own workspace.
func (s *server) handleRunnerResult() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Report json.RawMessage `json:"report"`
			Error  string          `json:"error"`
		}
		err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRunnerReport)).Decode(&in)
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("a report is at most %d MiB", maxRunnerReport>>20))
			return
		case err != nil:
			writeError(w, http.StatusBadRequest, "send JSON: {\"report\": the Lighthouse JSON report} or {\"error\": why the page failed}")
			return
		}
		f := store.RunnerFinish{Error: strings.TrimSpace(in.Error)}
		switch {
		case f.Error != "":
			if len(f.Error) > 2000 {
				f.Error = f.Error[:2000]
			}
			f.Error = strings.ToValidUTF8(f.Error, "?")
		case len(in.Report) == 0 || string(in.Report) == "null":
			writeValidation(w, map[string][]string{"report": {"the Lighthouse JSON report (lighthouse --output=json), or an error"}})
			return
		default:
			if _, err := lighthouse.ExtractLighthouse(in.Report); err != nil {
				writeValidation(w, map[string][]string{"report": {err.Error()}})
				return
			}
			f.Report, f.Benchmark = in.Report, lighthouse.BenchmarkIndex(in.Report)
		}
		err = s.Runners.FinishRunnerAudit(r.Context(), runnerFrom(r.Context()), store.CanonicalID(r.PathValue("leaseId")), f, s.Now())
		switch {
		case errors.Is(err, store.ErrGone):
			leaseGone(w)
		case err != nil:
			s.error(w, r, err, "")
		default:
			oauth.WriteJSON(w, http.StatusOK, map[string]string{"status": "accepted"})
		}
	})
}

// handleRunnerRevoke revokes the runner's own token: whoever finds a token where it should not
// be (a log, a leaked file) stops it in one call. Its leases go back to the queue.
func (s *server) handleRunnerRevoke() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := runnerFrom(r.Context())
		if err := s.Runners.RevokeRunnerToken(r.Context(), t.WorkspaceID, t.ID, s.Now()); err != nil {
			s.error(w, r, err, "")
			return
		}
		s.Log.Info("runner token revoked by itself", "token", t.ID, "workspace", t.WorkspaceID)
		oauth.WriteJSON(w, http.StatusOK, map[string]string{"status": "revoked"})
	})
}

// handleCreateRunnerToken makes a runner token of the workspace (owners) and shows it once.
func (s *server) handleCreateRunnerToken() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws := workspaceFrom(r.Context())
		if s.Runners == nil {
			s.renderError(w, r, http.StatusNotFound, "Runners are not available on this service.")
			return
		}
		name := strings.TrimSpace(r.PostForm.Get("name"))
		if name == "" || !validLabel(name) {
			s.renderError(w, r, http.StatusUnprocessableEntity, "Name the runner token in 1 to 64 printable characters.")
			return
		}
		secret, hash := store.NewSecret(prefixRunnerToken)
		t := store.RunnerToken{ID: store.NewID(), WorkspaceID: ws.ID, Name: name, TokenHash: hash, Prefix: secret[:12], CreatedAt: s.Now()}
		if err := s.Runners.CreateRunnerToken(r.Context(), t); err != nil {
			s.error(w, r, err, "")
			return
		}
		s.audit(r.Context(), ws.ID, store.LogRunnerTokenCreated, name, map[string]string{"tokenId": t.ID, "prefix": t.Prefix})
		// Shown once, after the redirect (notice.go): a reload shows it no more and makes no token.
		s.redirectNotice(w, r, "/workspaces/"+ws.ID+"#runners", notice{Text: "Your new runner token “" + name + "”.",
			Detail: "Start the runner with it (see Runners in the documentation). Copy it now: it is shown only once and SitePulse keeps only a hash of it.",
			Secret: secret, Label: "New runner token"})
	})
}

// handleRevokeRunnerToken revokes one of the workspace's runner tokens (owners): its runners
// stop at their next call, and the audits they held go back to the queue at once.
func (s *server) handleRevokeRunnerToken() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws := workspaceFrom(r.Context())
		if s.Runners == nil {
			s.renderError(w, r, http.StatusNotFound, "Runners are not available on this service.")
			return
		}
		id := store.CanonicalID(r.PathValue("tokenId"))
		if err := s.Runners.RevokeRunnerToken(r.Context(), ws.ID, id, s.Now()); err != nil {
			s.error(w, r, err, "There is no such runner token in this workspace.")
			return
		}
		s.audit(r.Context(), ws.ID, store.LogRunnerTokenRevoked, "", map[string]string{"tokenId": id})
		http.Redirect(w, r, "/workspaces/"+ws.ID+"?done=runner-revoked#runners", http.StatusSeeOther)
	})
}

// parseLocations reads a site's runner locations: labels separated by commas, at most 10.
func parseLocations(v string) ([]string, bool) {
	var out []string
	for _, l := range strings.Split(v, ",") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if !validLabel(l) || len(out) == 10 {
			return nil, false
		}
		out = append(out, l)
	}
	return out, true
}

// handleSetLocations sets the runner locations a site is audited from (owners and editors).
func (s *server) handleSetLocations() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, ok := s.ownSite(w, r)
		if !ok {
			return
		}
		if s.Runners == nil {
			s.renderError(w, r, http.StatusNotFound, "Runners are not available on this service.")
			return
		}
		locs, ok := parseLocations(r.PostForm.Get("locations"))
		if !ok {
			s.renderError(w, r, http.StatusUnprocessableEntity, "Name at most 10 runner locations, separated by commas, each of at most 64 printable characters.")
			return
		}
		if err := s.Runners.SetSiteLocations(r.Context(), site.ID, locs); err != nil {
			s.error(w, r, err, "There is no such site in your account.")
			return
		}
		http.Redirect(w, r, "/sites/"+site.ID+"/edit?done=locations#locations", http.StatusSeeOther)
	})
}
