package handlers

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// exportDeadline is how long one export may take to write; it replaces the server's
// WriteTimeout for this response, since a large scan takes longer to stream.
const exportDeadline = 10 * time.Minute

// csvHeader is the export's header row, in the interface's order.
var csvHeader = []string{"Page URL", "Page Path", "Strategy", "Performance", "SEO", "Accessibility", "Best Practices",
	"LCP (ms)", "CLS", "INP (ms)", "FCP (ms)", "TTFB (ms)", "CrUX LCP", "CrUX CLS", "CrUX INP", "Has CrUX Data",
	"Top Opportunities"}

// requireSession lets only requests with a valid session cookie through, answering 401 JSON
// otherwise: the export is an API route, so a signed-out client gets an error it can read
// rather than requireUser's login redirect. Bearer credentials are never looked at.
func (s *server) requireSession(next http.Handler) http.Handler {
	return s.withVisitor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if visitorFrom(r.Context()) == nil {
			writeError(w, http.StatusUnauthorized, "sign in: the export takes a session cookie only")
			return
		}
		next.ServeHTTP(w, r)
	}))
}

// handleExport streams one scan of a site as CSV or JSON (interface "GET
// /api/sites/{siteId}/export"). Rows go out as the store yields them, so a
// scan of thousands of pages never sits in memory.
//
// The status and headers are sent with the first row. An error before that is a clean JSON
// 500; an error after it aborts the response (the connection is closed without the final
// chunk), so the client sees a failed download and never a truncated file that looks whole.
func (s *server) handleExport() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, userID := r.Context(), store.UserIDFrom(r.Context())
		q := r.URL.Query()
		format := q.Get("format")
		if format == "" {
			format = "csv"
		}
		fieldErrors := map[string][]string{}
		if format != "csv" && format != "json" {
			fieldErrors["format"] = []string{"Expected csv or json"}
		}
		scanID := q.Get("scanId")
		if scanID != "" && !store.ValidUUID(scanID) {
			fieldErrors["scanId"] = []string{"Invalid uuid"}
		}
		if len(fieldErrors) > 0 {
			writeValidation(w, fieldErrors)
			return
		}
		siteID := r.PathValue("siteId")
		if !store.ValidUUID(siteID) {
			writeError(w, http.StatusNotFound, "site not found")
			return
		}
		if s.ssoOn(ctx) { // a workspace's single sign-on rule: one more read on such a server
			site, err := s.Auth.Site(ctx, userID, siteID)
			if err == nil {
				err = s.sessionGate(r, site.WorkspaceID)
			}
			var sso *ssoRequiredError
			if errors.As(err, &sso) {
				writeError(w, http.StatusForbidden, sso.why)
				return
			}
		}
		// One statement (store.ExportScan) finds the site, which is the reader's when they are a
		// member of its workspace (every role reads), its scan, and streams the scan's rows;
		// head answers for the site and the scan before the first row.
		out := &exportWriter{w: w, format: format}
		var scan store.Scan
		var site store.Site
		answered := errors.New("answered")
		head := func(st store.Site, sc *store.Scan) error {
			site = st
			switch {
			case sc == nil && scanID != "":
				writeError(w, http.StatusNotFound, "scan not found for this site")
				return answered
			case sc == nil:
				writeError(w, http.StatusNotFound, "site has no completed scan")
				return answered
			case sc.Status != store.StatusComplete:
				writeError(w, http.StatusNotFound, "scan is "+string(sc.Status)+", not complete: export it once it completes")
				return answered
			case sc.DetailsPrunedAt != nil:
				writeError(w, http.StatusGone, prunedMessage(*sc)+" Its scores remain in the trend.")
				return answered
			}
			scan = *sc
			out.disposition = contentDisposition(site.Name, sc.ID, format)
			http.NewResponseController(w).SetWriteDeadline(time.Now().Add(exportDeadline))
			return nil
		}
		if format == "json" && s.Field != nil {
			out.field = s.exportFieldOf(ctx, userID, store.CanonicalID(siteID), &scan)
		}
		err := s.API.ExportScan(ctx, userID, store.CanonicalID(siteID), store.CanonicalID(scanID), format == "json", head, out.row)
		if errors.Is(err, answered) {
			return
		}
		if err == nil {
			err = out.finish()
		}
		if err == nil {
			// Who took the scan's results out, in the site's workspace's log.
			s.audit(ctx, site.WorkspaceID, store.LogExport, site.Name, map[string]string{"siteId": site.ID, "scanId": scan.ID, "format": format})
		}
		if err != nil {
			if !out.started {
				s.error(w, r, err, "site not found")
				return
			}
			s.Log.Error("export aborted mid-stream", "path", logPath(r), "scan", scan.ID, "rows", out.rows, "err", err)
			panic(http.ErrAbortHandler)
		}
	})
}

// maxFilename caps the export's file name in bytes, extension included, so a long site name
// cannot make a header that proxies reject.
const maxFilename = 100

// contentDisposition is the export's Content-Disposition: the ASCII file name of exportFilename
// and, when the site name has letters beyond ASCII, RFC 6266's filename* in UTF-8 (RFC 5987),
// both at most maxFilename bytes.
func contentDisposition(siteName, scanID, format string) string {
	suffix := "-scan-" + scanID[:8] + "." + format
	ascii := exportFilename(siteName, scanID) + "." + format
	cd := "attachment; filename=" + ascii
	if name := slugName(siteName, true, maxFilename-len(suffix)); name != "" && name+suffix != ascii {
		cd += "; filename*=UTF-8''" + rfc5987(name+suffix)
	}
	return cd
}

// exportFilename is the export's file name without extension: the site name lower-cased, every run
// of other than a-z0-9 replaced by "-", trimmed and cut so that the name with its extension
// stays within maxFilename bytes, then "-scan-" and the scan id's first 8 characters. A name
// with nothing left becomes "site".
func exportFilename(siteName, scanID string) string {
	suffix := "-scan-" + scanID[:8]
	name := slugName(siteName, false, maxFilename-len(suffix)-len(".json"))
	if name == "" {
		name = "site"
	}
	return name + suffix
}

// slugName lower-cases name and replaces every run of other than letters and digits (ASCII
// only, or any script when anyScript is set) by "-", trimmed, at most max bytes, cut between
// characters.
func slugName(name string, anyScript bool, max int) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(name) {
		keep := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		if anyScript && c >= utf8.RuneSelf {
			keep = unicode.IsLetter(c) || unicode.IsDigit(c)
		}
		switch {
		case keep && b.Len()+utf8.RuneLen(c) <= max:
			b.WriteRune(c)
			dash = false
		case keep:
			return strings.Trim(b.String(), "-")
		case !dash && b.Len() < max:
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}

// rfc5987 percent-encodes s but for RFC 5987's attr-char.
func rfc5987(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// exportWriter writes rows of one format, sending the headers with the first.
type exportWriter struct {
	w           http.ResponseWriter
	buf         *bufio.Writer
	format      string
	disposition string
	started     bool
	rows        int
	// field gives a JSON row its field figures (field.go); nil without a field store.
	field func(pageURL string, s store.Strategy) (*exportField, error)
}

func (e *exportWriter) start() error {
	e.started = true
	h := e.w.Header()
	if e.format == "csv" {
		h.Set("Content-Type", "text/csv; charset=utf-8")
	} else {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Disposition", e.disposition)
	h.Set("Cache-Control", "no-store")
	e.w.WriteHeader(http.StatusOK)
	e.buf = bufio.NewWriterSize(e.w, 32<<10)
	if e.format == "csv" {
		writeCSVRow(e.buf, csvHeader, -1)
		return nil
	}
	_, err := e.buf.WriteString("[")
	return err
}

func (e *exportWriter) row(r store.PageResult, previous *store.PageResult) error {
	if !e.started {
		if err := e.start(); err != nil {
			return err
		}
	}
	e.rows++
	var err error
	if e.format == "csv" {
		err = writeCSVRow(e.buf, csvRow(r), len(csvHeader)-1)
	} else {
		if e.rows > 1 {
			e.buf.WriteByte(',')
		}
		var b []byte
		row := jsonRow(r, previous)
		if e.field != nil {
			row.Field, err = e.field(r.PageURL, r.Strategy)
		}
		if err == nil {
			if b, err = json.Marshal(row); err == nil {
				_, err = e.buf.Write(b)
			}
		}
	}
	if err == nil && e.rows == 1 {
		// The headers and the first row go out at once, so the download starts right away.
		if err = e.buf.Flush(); err == nil {
			err = http.NewResponseController(e.w).Flush()
		}
	}
	return err
}

func (e *exportWriter) finish() error {
	if !e.started {
		if err := e.start(); err != nil {
			return err
		}
	}
	if e.format == "json" {
		e.buf.WriteString("]\n")
	}
	return e.buf.Flush()
}

// writeCSVRow writes one RFC 4180 row. Every cell passes the CSV injection guard (a
// spreadsheet must not run a cell as a formula); the cell at index quoted is always quoted (the interface's "quoted text"), others
// only when they must be.
func writeCSVRow(w *bufio.Writer, cells []string, quoted int) error {
	for i, c := range cells {
		if i > 0 {
			w.WriteByte(',')
		}
		c = guardCell(c)
		if i == quoted || strings.ContainsAny(c, "\",\r\n") || strings.HasPrefix(c, " ") {
			w.WriteByte('"')
			w.WriteString(strings.ReplaceAll(c, `"`, `""`))
			w.WriteByte('"')
		} else {
			w.WriteString(c)
		}
	}
	_, err := w.WriteString("\r\n")
	return err
}

// guardCell prefixes a cell a spreadsheet would run as a formula with "'" (OWASP CSV Injection).
func guardCell(c string) string {
	if c != "" && strings.ContainsRune("=+-@\t\r", rune(c[0])) {
		return "'" + c
	}
	return c
}

func csvRow(r store.PageResult) []string {
	score := func(v *int) string {
		if v == nil {
			return ""
		}
		return strconv.Itoa(*v)
	}
	ms := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(math.Round(*v), 'f', -1, 64)
	}
	cls := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(math.Round(*v*10000)/10000, 'f', -1, 64)
	}
	opps := make([]string, len(r.Opportunities))
	for i, o := range r.Opportunities {
		opps[i] = fmt.Sprintf("%s (%dms)", o.Title, int64(math.Round(o.SavingsMs)))
	}
	v, c := r.CoreWebVitals, r.Crux
	return []string{r.PageURL, r.PagePath, string(r.Strategy),
		score(r.Scores.Performance), score(r.Scores.SEO), score(r.Scores.Accessibility), score(r.Scores.BestPractices),
		ms(v.LCP), cls(v.CLS), ms(v.INP), ms(v.FCP), ms(v.TTFB),
		ms(c.LCP), cls(c.CLS), ms(c.INP), strconv.FormatBool(c.HasCruxData),
		strings.Join(opps, "; ")}
}

// exportPage is one element of the JSON export: the interface's keys, then what explains the
// run (issue 33): its requests and what changed since the previous scan.
type exportPage struct {
	PageURL           string              `json:"pageUrl"`
	PagePath          string              `json:"pagePath"`
	Strategy          store.Strategy      `json:"strategy"`
	Scores            store.PageScores    `json:"scores"`
	CoreWebVitals     exportVitals        `json:"coreWebVitals"`
	Crux              store.Crux          `json:"crux"`
	Opportunities     []store.Opportunity `json:"opportunities"`
	ThirdPartyScripts []store.ThirdParty  `json:"thirdPartyScripts"`
	A11yIssues        []store.A11yIssue   `json:"a11yIssues"`
	// Requests are the run's requests in the order they started (null when the run was kept
	// without what explains it).
	Requests []exportRequest `json:"requests"`
	// Changes are what changed since the site's previous completed scan's run of the page and
	// strategy (analysis.Compare, as the compare page shows it); null when it has none.
	Changes *analysis.Comparison `json:"changes"`
	// Field are the page's field figures on the strategy's device as of the scan (field.go);
	// absent when the page has none, so an export of a site without field data is unchanged.
	Field *exportField `json:"field,omitempty"`
}

// exportRequest is a request as the export writes it, compactly.
type exportRequest struct {
	URL            string `json:"url"`
	Type           string `json:"type"`
	TransferBytes  int64  `json:"transferBytes"`
	StartMs        int    `json:"startMs"`
	EndMs          int    `json:"endMs"`
	RenderBlocking bool   `json:"renderBlocking"`
	LCP            bool   `json:"lcp"`
}

type exportVitals struct {
	LCP  *float64 `json:"lcp"`
	CLS  *float64 `json:"cls"`
	INP  *float64 `json:"inp"`
	FCP  *float64 `json:"fcp"`
	TTFB *float64 `json:"ttfb"`
}

// jsonRow is a result as the JSON export writes it, with its changes since previous (the
// previous completed scan's run of the page, nil when there is none).
func jsonRow(r store.PageResult, previous *store.PageResult) exportPage {
	v := r.CoreWebVitals
	p := exportPage{PageURL: r.PageURL, PagePath: r.PagePath, Strategy: r.Strategy, Scores: r.Scores,
		CoreWebVitals: exportVitals{LCP: v.LCP, CLS: v.CLS, INP: v.INP, FCP: v.FCP, TTFB: v.TTFB}, Crux: r.Crux,
		Opportunities: nonNilSlice(r.Opportunities), ThirdPartyScripts: nonNilSlice(r.ThirdPartyScripts), A11yIssues: nonNilSlice(r.A11yIssues)}
	if r.Explain != nil {
		p.Requests = make([]exportRequest, len(r.Explain.Requests))
		for i, q := range r.Explain.Requests {
			p.Requests[i] = exportRequest{URL: q.URL, Type: q.Type, TransferBytes: q.TransferBytes, StartMs: q.StartMs, EndMs: q.EndMs,
				RenderBlocking: q.RenderBlocking, LCP: q.LCP}
		}
	}
	if previous != nil {
		c := analysis.Compare(*previous, r)
		p.Changes = &c
	}
	return p
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
