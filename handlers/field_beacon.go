package handlers

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"sitepulse/handlers/beacon"
	"sitepulse/store"
)

// BeaconStore is the beacon's part of the store: the site's public id for its snippet, and
// what the ingest reads and writes (handlers/beacon.Store).
type BeaconStore interface {
	BeaconKey(ctx context.Context, userID, siteID string) (string, error)
	beacon.Store
}

// handleBeaconScript serves the beacon script (docs/field.md "The beacon"): one file for every
// site, cacheable, gzip-compressed when the client takes it; any page may load it, also as a
// CORS request (the tag the platform renders checks the script's integrity, which needs one).
func (s *server) handleBeaconScript() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		h.Set("Cache-Control", "public, max-age=3600")
		h.Set("Cross-Origin-Resource-Policy", "cross-origin")
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Vary", "Accept-Encoding")
		h.Set("ETag", beacon.Script.ETag)
		if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, beacon.Script.ETag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		body := beacon.Script.Plain
		if acceptsGzip(r) {
			h.Set("Content-Encoding", "gzip")
			body = beacon.Script.Gzip
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	})
}

// acceptsGzip answers whether the request's Accept-Encoding takes gzip (not with q=0).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

// handleBeacon is the public ingest (POST /api/beacon/{publicId}): anyone can send to it, so
// it takes only what the script sends, from the site's own origin, within limits. 204 when
// accepted (sampled away past the daily cap included); otherwise the REST error shape:
//
//	404 an id of no site (or not an id)    415 not text/plain (the script's type: no preflight)
//	413 a body above 4 KB                  400 not the script's JSON    422 a value refused
//	403 an Origin that is not the site's   429 past the address's or the site's rate
//	503 the store cannot say whose id it is (Retry-After); accepted beacons wait in memory
func (s *server) handleBeacon() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.PathValue("publicId")
		if !store.ValidBeaconKey(key) {
			writeError(w, http.StatusNotFound, "no site has this beacon id")
			return
		}
		if s.Beacon == nil {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
			writeError(w, http.StatusServiceUnavailable, "the beacon is off on this SitePulse")
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "text/plain" {
			writeError(w, http.StatusUnsupportedMediaType, "a beacon is sent as text/plain")
			return
		}
		if !s.Beacon.AllowAddr(clientIP(r)) {
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusTooManyRequests, "too many beacons from this address; slow down")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, beacon.MaxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeError(w, http.StatusRequestEntityTooLarge, "a beacon is at most 4 KB")
				return
			}
			writeError(w, http.StatusBadRequest, "the beacon could not be read")
			return
		}
		b, err := beacon.Parse(body)
		if err != nil {
			var pe *beacon.ParseError
			status := http.StatusUnprocessableEntity
			if errors.As(err, &pe) && pe.Malformed {
				status = http.StatusBadRequest
			}
			writeError(w, status, err.Error())
			return
		}
		switch err := s.Beacon.Accept(r.Context(), key, r.Header.Get("Origin"), b); {
		case err == nil:
			w.WriteHeader(http.StatusNoContent)
		case errors.Is(err, beacon.ErrUnknownSite):
			writeError(w, http.StatusNotFound, err.Error())
		case errors.Is(err, beacon.ErrOrigin):
			writeError(w, http.StatusForbidden, err.Error())
		case errors.Is(err, beacon.ErrRate):
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusTooManyRequests, err.Error())
		default:
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
			writeError(w, http.StatusServiceUnavailable, beacon.ErrUnavailable.Error())
		}
	})
}

// beaconView is the beacon's card on the site's edit page: the snippet to paste and, for a
// site imported from the platform, the one-click install (field_beacon_platform.go).
type beaconView struct {
	Snippet string
	// Platform: the site was imported through the workspace's platform connection.
	Platform bool
	// Installed is the script applied to the site on the platform; Current says it is the
	// version of the script served now.
	Installed *store.PlatformScript
	Current   bool
	// NeedsScope: the connection was made without the custom code scopes; Reconnect: the
	// platform refused its token. Either way, connecting again (ConnectURL, an owner's: CanConnect) fixes it.
	NeedsScope, Reconnect bool
	ConnectURL            string
	CanConnect            bool
	// Error says why the last install or removal did nothing.
	Error string
}

// beaconOf is the site's snippet for whoever edits it; nil when the beacon is off.
func (s *server) beaconOf(ctx context.Context, userID string, site store.Site) (*beaconView, error) {
	if s.Beacons == nil {
		return nil, nil
	}
	key, err := s.Beacons.BeaconKey(ctx, userID, site.ID)
	if err != nil {
		return nil, err
	}
	raw := `<script defer src="` + s.BaseURL + `/beacon/v1.js" data-site="` + key + `"></script>`
	v := &beaconView{Snippet: raw}
	return v, s.beaconPlatform(ctx, site, v)
}
