package handlers

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"sitepulse/store"
)

// The screenshots of a run (issue 33 item 2): GET /sites/{siteId}/scans/{scanId}/images/{index}
// ?path=&strategy= serves one picture of a page of a scan to those who may read the site,
// through the scan page's own authorization (onSite, then ownScan), and GET
// /report/{token}/images/{index}?path=&strategy= to a client report's readers, only of the
// report's scan. Every view asks the server again (no-cache) with the picture's ETag, and the
// server answers 304 only after the request's own authorization passed: a revoked report link
// answers 410 and a removed member 404, where a year's cache (the rule until issue 44) would
// have kept showing what they may no longer see. An unchanged picture costs a 304, not its bytes.

// revalidate is the Cache-Control of every picture: the reader's browser only, asked every view.
const revalidate = "private, no-cache"

// pageQuery reads the page and strategy a page's view names (?path=/pricing&strategy=desktop),
// mobile when none; ok is false for anything that cannot be a page of a scan.
func pageQuery(r *http.Request) (path string, strategy store.Strategy, ok bool) {
	return pageParams(r, "path")
}

// pageParams is pageQuery with the page in the query parameter named key.
func pageParams(r *http.Request, key string) (path string, strategy store.Strategy, ok bool) {
	q := r.URL.Query()
	path, strategy = q.Get(key), store.Strategy(q.Get("strategy"))
	if strategy == "" {
		strategy = store.StrategyMobile
	}
	ok = (strategy == store.StrategyMobile || strategy == store.StrategyDesktop) && strings.HasPrefix(path, "/") &&
		len(path) <= store.MaxPagePath && utf8.ValidString(path) && !hasControl(path)
	return path, strategy, ok
}

// imageRef names a picture of a run: page, strategy and index, from an image route's path and
// query.
type imageRef struct {
	path     string
	strategy store.Strategy
	index    int
}

// readImageRef reads the picture a request names; ok is false for anything that cannot be one
// ({index} a small whole number written plainly, a page and strategy as pageQuery reads them).
func readImageRef(r *http.Request) (ref imageRef, ok bool) {
	v := r.PathValue("index")
	i, err := strconv.Atoi(v)
	ref.path, ref.strategy, ok = pageQuery(r)
	ref.index = i
	return ref, ok && err == nil && i >= 0 && i < store.MaxPageImages && strconv.Itoa(i) == v
}

const noImage = "There is no such picture of this scan."

// serveImage answers the picture a request names, read by load, with its ETag (304 when the
// browser holds it); a picture that cannot be, or is not kept, is the same 404.
func (s *server) serveImage(w http.ResponseWriter, r *http.Request, load func(imageRef) (store.PageImage, error)) {
	ref, ok := readImageRef(r)
	if !ok {
		s.renderError(w, r, http.StatusNotFound, noImage)
		return
	}
	im, err := load(ref)
	if err != nil {
		s.error(w, r, err, noImage)
		return
	}
	sum := sha256.Sum256(im.Data) // a retried audit may still replace a running scan's picture
	etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
	h := w.Header()
	h.Set("Cache-Control", revalidate)
	h.Set("ETag", etag)
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", im.MIME)
	h.Set("Content-Length", strconv.Itoa(len(im.Data)))
	w.WriteHeader(http.StatusOK)
	w.Write(im.Data)
}

// etagMatches reads an If-None-Match header (RFC 9110 §13.1.2: a list, weak comparison, or *).
func etagMatches(header, etag string) bool {
	for _, v := range strings.Split(header, ",") {
		v = strings.TrimPrefix(strings.TrimSpace(v), "W/")
		if v == etag || v == "*" {
			return true
		}
	}
	return false
}

func (s *server) handleScanImage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, scan, ok := s.ownScan(w, r)
		if !ok {
			return
		}
		uid := visitorFrom(r.Context()).User.ID
		s.serveImage(w, r, func(ref imageRef) (store.PageImage, error) {
			return s.Scans.PageImage(r.Context(), uid, scan.ID, ref.path, ref.strategy, ref.index)
		})
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
		if reportState(rep, s.Now()) != "active" {
			s.renderError(w, r, http.StatusGone, "This report has expired.")
			return
		}
		s.serveImage(w, r, func(ref imageRef) (store.PageImage, error) {
			return s.Reports.ReportImage(r.Context(), rep, ref.path, ref.strategy, ref.index)
		})
	})
}
