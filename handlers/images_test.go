package handlers

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// A scan's screenshots are served as images to the site's readers, kept by their browser only
// and asked again on every view; a report link serves its own scan's, while the report is active; anything else
// is the same 404 as an unknown picture.
func TestScanImages(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newAPIFixture(t, b.Open(t))
			ctx := context.Background()
			list, err := f.st.PageImages(ctx, f.a.userID, f.a.scanID, "/", store.StrategyDesktop)
			must(t, err)
			if len(list) < 2 {
				t.Fatalf("the demo's latest scan keeps %d pictures of / on desktop", len(list))
			}
			want, err := f.st.PageImage(ctx, f.a.userID, f.a.scanID, "/", store.StrategyDesktop, 1)
			must(t, err)
			scanImage := "/sites/" + f.a.siteID + "/scans/" + f.a.scanID + "/images/1?path=%2F&strategy=desktop"
			resp, body := f.do(t, "GET", scanImage, "", "", cookie(f.a.session))
			if resp.StatusCode != 200 || !bytes.Equal([]byte(body), want.Data) {
				t.Fatalf("status %d, %d bytes; want 200 and the picture's %d", resp.StatusCode, len(body), len(want.Data))
			}
			h := resp.Header
			if h.Get("Content-Type") != "image/jpeg" || h.Get("Cache-Control") != revalidate || h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("headers %v", h)
			}

			report := "/report/" + f.a.reportToken + "/images/1?path=%2F&strategy=desktop"
			resp, body = f.do(t, "GET", report, "", "", cred{})
			if resp.StatusCode != 200 || !bytes.Equal([]byte(body), want.Data) || resp.Header.Get("Referrer-Policy") != "no-referrer" {
				t.Fatalf("by the report link: status %d, headers %v", resp.StatusCode, resp.Header)
			}

			for name, path := range map[string]string{
				"an index with a leading zero":  "/images/01?path=%2F&strategy=desktop",
				"a negative index":              "/images/-1?path=%2F&strategy=desktop",
				"an index that is no number":    "/images/x?path=%2F&strategy=desktop",
				"an index past the last":        "/images/15?path=%2F&strategy=desktop",
				"a huge index":                  "/images/99999999999999999999?path=%2F&strategy=desktop",
				"a page the scan did not audit": "/images/0?path=%2Fnowhere&strategy=desktop",
				"a path that is no path":        "/images/0?path=nowhere&strategy=desktop",
				"a strategy that is none":       "/images/0?path=%2F&strategy=both",
				"a control character":           "/images/0?path=%2F%00&strategy=desktop",
			} {
				if resp, _ := f.do(t, "GET", "/sites/"+f.a.siteID+"/scans/"+f.a.scanID+path, "", "", cookie(f.a.session)); resp.StatusCode != 404 {
					t.Errorf("%s: status %d, want 404", name, resp.StatusCode)
				}
				if resp, _ := f.do(t, "GET", "/report/"+f.a.reportToken+path, "", "", cred{}); resp.StatusCode != 404 {
					t.Errorf("%s by the report link: status %d, want 404", name, resp.StatusCode)
				}
			}
			// The report is of the latest scan: the previous scan's pictures are not its to serve,
			// and the scan route of the previous scan needs the session.
			scans, err := f.st.CompletedScans(ctx, f.a.userID, f.a.siteID, 2)
			must(t, err)
			prev := "/sites/" + f.a.siteID + "/scans/" + scans[1].ID + "/images/0?path=%2F&strategy=desktop"
			if resp, _ := f.do(t, "GET", prev, "", "", cookie(f.a.session)); resp.StatusCode != 200 {
				t.Errorf("the previous scan's picture: status %d", resp.StatusCode)
			}
			if resp, _ := f.do(t, "GET", prev, "", "", cookie(f.b.session)); resp.StatusCode != 404 {
				t.Errorf("a stranger's request for the previous scan's picture: status %d", resp.StatusCode)
			}

			// Revoked, the report serves no picture.
			must(t, f.st.RevokeReport(ctx, f.a.userID, f.a.reportID, f.now))
			if resp, _ := f.do(t, "GET", report, "", "", cred{}); resp.StatusCode != 410 {
				t.Errorf("a revoked report's picture: status %d, want 410", resp.StatusCode)
			}
		})
	}
}

// TestReportPicturesRevalidate (issue 44, attack 5): a report link's pictures are kept by no
// browser past the report: every view asks the server again (no-cache, with an ETag, so an
// unchanged picture costs a 304), and once the owner revokes the link the same conditional
// request answers 410, not the cached picture. The owner's scan pictures follow the same rule:
// a browser cache entry is authorised by no one, so a member removed from the workspace, or a
// browser signed out, keeps none of them either.
func TestReportPicturesRevalidate(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newAPIFixture(t, b.Open(t))
			ctx := context.Background()
			// A report that lives an hour, and one that never expires.
			token, hash := store.NewSecret("")
			expires := f.now.Add(time.Hour)
			id := store.NewID()
			must(t, f.st.CreateReport(ctx, store.Report{ID: id, TokenHash: hash, ScanID: f.a.scanID, UserID: f.a.userID, Title: "t",
				CreatedAt: f.now, ExpiresAt: &expires}))
			for _, c := range []struct {
				name, path string
				cred       cred
				revoke     func()
			}{
				{"the report link's picture", "/report/" + f.a.reportToken + "/images/1?path=%2F&strategy=desktop", cred{},
					func() { must(t, f.st.RevokeReport(ctx, f.a.userID, f.a.reportID, f.now)) }},
				{"an expiring report's picture", "/report/" + token + "/images/0?path=%2F&strategy=desktop", cred{},
					func() { must(t, f.st.RevokeReport(ctx, f.a.userID, id, f.now)) }},
				{"the scan page's picture", "/sites/" + f.a.siteID + "/scans/" + f.a.scanID + "/images/1?path=%2F&strategy=desktop", cookie(f.a.session), nil},
			} {
				resp, _ := f.do(t, "GET", c.path, "", "", c.cred)
				cc, etag := resp.Header.Get("Cache-Control"), resp.Header.Get("ETag")
				if resp.StatusCode != 200 || !strings.Contains(cc, "no-cache") || strings.Contains(cc, "max-age=") && !strings.Contains(cc, "max-age=0") || strings.Contains(cc, "immutable") {
					t.Errorf("%s: status %d, Cache-Control %q; want 200 and a picture revalidated on every view", c.name, resp.StatusCode, cc)
				}
				if etag == "" {
					t.Fatalf("%s: no ETag, so every view downloads it again", c.name)
				}
				if resp := conditionalGet(t, f, c.path, etag, c.cred); resp.StatusCode != http.StatusNotModified {
					t.Errorf("%s asked again with its ETag: status %d, want 304", c.name, resp.StatusCode)
				}
				if c.revoke == nil {
					// A stranger's conditional request, ETag and all, is the same 404 as any other.
					if resp := conditionalGet(t, f, c.path, etag, cookie(f.b.session)); resp.StatusCode != 404 {
						t.Errorf("%s asked by a stranger with its ETag: status %d, want 404", c.name, resp.StatusCode)
					}
					continue
				}
				c.revoke()
				if resp := conditionalGet(t, f, c.path, etag, c.cred); resp.StatusCode != http.StatusGone {
					t.Errorf("%s revalidated after revocation: status %d, want 410", c.name, resp.StatusCode)
				}
			}
		})
	}
}

func conditionalGet(t *testing.T, f *apiFixture, path, etag string, c cred) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", f.URL+path, nil)
	must(t, err)
	req.Header.Set("If-None-Match", etag)
	if c.cookie != "" {
		req.AddCookie(&http.Cookie{Name: "session", Value: c.cookie})
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	return resp
}
