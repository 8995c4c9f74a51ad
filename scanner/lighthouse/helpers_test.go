package lighthouse

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Copies of helpers the scanner and netguard tests also use.

// internalService stands in for a service on the scanner's own network; it counts what reaches it.
func internalService(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `<urlset><url><loc>http://internal/admin/secret-token</loc></url></urlset>`)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}
