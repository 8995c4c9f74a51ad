package handlers

import "net/http"

// handleHome lists the signed-in user's sites.
func (s *server) handleHome() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visitorFrom(r.Context())
		sites, err := s.Store.SitesOf(r.Context(), v.User.ID)
		if err != nil {
			s.serverError(w, r, "list sites", err)
			return
		}
		s.render(w, r, http.StatusOK, "home", page{Title: "Sites", Data: sites})
	})
}
