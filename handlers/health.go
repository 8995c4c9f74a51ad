package handlers

import (
	"context"
	"net/http"
	"sitepulse/oauth"
	"strconv"
	"time"
)

// HealthStore is what /healthz asks the store: its name and whether it answers.
type HealthStore interface {
	Name() string
	Ping(ctx context.Context) error
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
