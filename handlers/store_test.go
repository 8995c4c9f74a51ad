package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"

	"sitepulse/store"
)

// brokenStore is a store whose database is gone.
type brokenStore struct{ store.Store }

func (brokenStore) Ping(context.Context) error { return errors.New("connection refused") }

func newRecorder(h http.Handler, method, path, form string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
