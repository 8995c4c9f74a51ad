package handlers

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"
	"time"

	"sitepulse/oauth"
)

// HealthStore is what /healthz and /readyz ask the store: its name, whether it answers, and
// whether its schema is this program's.
type HealthStore interface {
	Name() string
	Ping(ctx context.Context) error
	Ready(ctx context.Context) error
}

// handleHealth answers 200 when the store answers within two seconds, 503 otherwise, so a load
// balancer takes a replica whose database is gone out of rotation.
func (s *server) handleHealth() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Cache-Control", "no-store")
		if err := s.Health.Ping(ctx); err != nil {
			s.Log.Warn("health check: store not answering", "store", s.Health.Name(), "err", err)
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
			oauth.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "store": s.Health.Name()})
			return
		}
		oauth.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok", "store": s.Health.Name()})
	})
}

// handleReady answers whether a load balancer should send this process requests: 503 while it
// drains after SIGTERM (Stopping), while its store does not answer, or while the store's schema
// lacks a migration this program needs; 200 otherwise. /healthz stays liveness: a draining
// process is alive and finishing its requests.
func (s *server) handleReady() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		unready := func(reason string) {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
			oauth.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": reason, "store": s.Health.Name()})
		}
		select {
		case <-s.Stopping:
			unready("draining")
			return
		default:
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.Health.Ready(ctx); err != nil {
			s.Log.Warn("readiness check: store not ready", "store", s.Health.Name(), "err", err)
			unready("unavailable")
			return
		}
		oauth.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready", "store": s.Health.Name()})
	})
}

// handleMetrics serves /metrics on the main listener to a scraper holding METRICS_TOKEN as a
// bearer token, compared in constant time; without METRICS_TOKEN there is no such page.
func (s *server) handleMetrics() http.Handler {
	want := sha256.Sum256([]byte(s.MetricsToken))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.MetricsToken == "" {
			s.renderError(w, r, http.StatusNotFound, "There is no page at this address.")
			return
		}
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got := sha256.Sum256([]byte(token))
		if !ok || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "metrics need the bearer token METRICS_TOKEN", http.StatusUnauthorized)
			return
		}
		s.Metrics.ServeHTTP(w, r)
	})
}
