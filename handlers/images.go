package handlers

import (
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"sitepulse/store"
)

// The screenshots of a run (issue 33 item 2): GET /sites/{siteId}/scans/{scanId}/images/{index}
// ?path=&strategy= serves one picture of a page of a scan to those who may read the site,
// through the scan page's own authorization (onSite, then ownScan), and GET
// /report/{token}/images/{index}?path=&strategy= to a client report's readers, only of the
// report's scan. The pictures of a finished scan never change: they are cached for a year by the
// reader's browser only (private).

// longCache is the Cache-Control of a finished scan's picture.
const longCache = "private, max-age=31536000, immutable"

// pageQuery reads the page and strategy a page's view names (?path=/pricing&strategy=desktop),
// mobile when none; ok is false for anything that cannot be a page of a scan.
func pageQuery(r *http.Request) (path string, strategy store.Strategy, ok bool) {
	q := r.URL.Query()
	path, strategy = q.Get("path"), store.Strategy(q.Get("strategy"))
	if strategy == "" {
		strategy = store.StrategyMobile
	}
	ok = (strategy == store.StrategyMobile || strategy == store.StrategyDesktop) && strings.HasPrefix(path, "/") &&
		len(path) <= store.MaxPagePath && utf8.ValidString(path) && !hasControl(path)
	return path, strategy, ok
}

// imageIndex reads the {index} of an image route: a small whole number.
func imageIndex(r *http.Request) (int, bool) {
	v := r.PathValue("index")
	i, err := strconv.Atoi(v)
	return i, err == nil && i >= 0 && i < store.MaxPageImages && strconv.Itoa(i) == v
}

// writeImage answers one picture with its own type, cached as cache says.
func writeImage(w http.ResponseWriter, im store.PageImage, cache string) {
	h := w.Header()
	h.Set("Content-Type", im.MIME)
	h.Set("Content-Length", strconv.Itoa(len(im.Data)))
	h.Set("Cache-Control", cache)
	w.WriteHeader(http.StatusOK)
	w.Write(im.Data)
}

const noImage = "There is no such picture of this scan."

func (s *server) handleScanImage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, scan, ok := s.ownScan(w, r)
		if !ok {
			return
		}
		path, strategy, ok := pageQuery(r)
		index, okIndex := imageIndex(r)
		if !ok || !okIndex {
			s.renderError(w, r, http.StatusNotFound, noImage)
			return
		}
		im, err := s.Scans.PageImage(r.Context(), visitorFrom(r.Context()).User.ID, scan.ID, path, strategy, index)
		if err != nil {
			s.error(w, r, err, noImage)
			return
		}
		cache := longCache
		if !scan.Status.Terminal() { // a retried audit may still replace the run
			cache = "private, no-cache"
		}
		writeImage(w, im, cache)
	})
}

func (s *server) handleReportImage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Robots-Tag", "noindex, nofollow")
		h.Set("Referrer-Policy", "no-referrer")
		rep, err := s.Reports.ReportByHash(r.Context(), store.HashSecret(r.PathValue("token")))
		if err != nil {
			s.error(w, r, err, "There is no report at this address.")
			return
		}
		now := s.Now()
		if reportState(rep, now) != "active" {
			s.renderError(w, r, http.StatusGone, "This report has expired.")
			return
		}
		path, strategy, ok := pageQuery(r)
		index, okIndex := imageIndex(r)
		if !ok || !okIndex {
			s.renderError(w, r, http.StatusNotFound, noImage)
			return
		}
		im, err := s.Reports.ReportImage(r.Context(), rep, path, strategy, index)
		if err != nil {
			s.error(w, r, err, noImage)
			return
		}
		// Cached no longer than the report lives.
		age := 365 * 24 * time.Hour
		if rep.ExpiresAt != nil {
			age = min(age, rep.ExpiresAt.Sub(now))
		}
		writeImage(w, im, "private, max-age="+strconv.Itoa(int(age.Seconds())))
	})
}
