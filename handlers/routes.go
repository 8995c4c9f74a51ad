package handlers

import "net/http"

// addRoutes is the map of the service: every route SitePulse answers is registered here.
func (s *server) addRoutes(mux *http.ServeMux) {
	// Operations and assets.
	mux.Handle("GET /healthz", s.handleHealth())
	mux.Handle("GET /static/", s.handleStatic())
	mux.Handle("GET /favicon.ico", http.RedirectHandler("/static/favicon.svg", http.StatusMovedPermanently))

	// Accounts (DESIGN §6.10).
	mux.Handle("GET /signup", s.handleSignupPage())
	mux.Handle("POST /signup", s.handleSignup())
	mux.Handle("GET /login", s.handleLoginPage())
	mux.Handle("POST /login", s.handleLogin())
	mux.Handle("POST /logout", s.requireUser(s.handleLogout()))

	// Settings: API keys, notifications.
	mux.Handle("GET /settings", s.requireUser(s.handleSettings()))
	mux.Handle("POST /settings/api-keys", s.requireUser(s.handleCreateAPIKey()))
	mux.Handle("POST /settings/api-keys/{keyID}/revoke", s.requireUser(s.handleRevokeAPIKey()))
	mux.Handle("POST /settings/notifications", s.requireUser(s.handleNotifications()))

	// Web UI.
	mux.Handle("GET /{$}", s.requireUser(s.handleHome()))
}
