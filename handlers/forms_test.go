package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// The third red team's channel form repeated one site id 9,990 times and the handler read the
// site once per copy (2.4 s). Repeated values are deduplicated and capped before any store
// read: the form costs the reads of one, and a form naming more sites than a workspace may
// have is refused without reading any.
func TestRepeatedFormValuesCostOneRead(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			st := &countingStore{Store: be.Open(t)}
			hk := newHook(t)
			ts, b := channelsServer(t, st, hk)
			ws := b.userID
			site := store.Site{ID: store.NewID(), UserID: b.userID, WorkspaceID: ws, Name: "Shop", Domain: "shop.test", Pages: []string{"/"}, CreatedAt: ts.now}
			must(t, st.CreateSite(context.Background(), site))
			form := func(sites []string) url.Values {
				return url.Values{"name": {"ops"}, "kind": {"teams"}, "url": {hk.URL}, "events": {store.EventScanFailed}, "sites": sites}
			}
			same := make([]string, 9990)
			for i := range same {
				same[i] = site.ID
			}
			st.sites.Store(0)
			resp, _ := b.postCSRF("/workspaces/"+ws+"/channels", form(same))
			wantStatus(t, resp, http.StatusSeeOther)
			if n := st.sites.Load(); n > 1 {
				t.Errorf("%d reads of sites for one site id repeated 9,990 times, want 1", n)
			}
			chs, err := st.ChannelsIn(context.Background(), b.userID, ws)
			must(t, err)
			if len(chs) != 1 || len(chs[0].SiteIDs) != 1 || chs[0].SiteIDs[0] != site.ID {
				t.Errorf("channels = %+v, want one naming the site once", chs)
			}
			// More distinct sites than a workspace may have (MAX_SITES_PER_WORKSPACE):
			// refused with the form's message before any read.
			many := make([]string, store.DefaultMaxSites+1)
			for i := range many {
				many[i] = store.NewID()
			}
			st.sites.Store(0)
			resp, body := b.postCSRF("/workspaces/"+ws+"/channels", form(many))
			wantStatus(t, resp, http.StatusUnprocessableEntity)
			contains(t, body, "Choose sites from the list.")
			// The page shown with the message lists the workspace's sites: that read only.
			if n := st.sites.Load(); n > 1 {
				t.Errorf("%d reads of sites for a form naming 51 sites, want only the page's list", n)
			}
			if strings.Count(body, `name="sites"`) == 0 {
				t.Errorf("the form is not shown again:\n%s", body)
			}
		})
	}
}

func TestFormValues(t *testing.T) {
	for _, c := range []struct {
		name   string
		in     []string
		max    int
		want   []string
		wantOK bool
	}{
		{"none", nil, 3, []string{}, true},
		{"duplicates kept once, in order", []string{"b", "a", "b", "a", "c"}, 3, []string{"b", "a", "c"}, true},
		{"9,990 copies of one are one", append(make([]string, 0), strings.Split(strings.Repeat("x,", 9990), ",")[:9990]...), 1, []string{"x"}, true},
		{"more distinct values than max are refused", []string{"a", "b", "c", "d"}, 3, nil, false},
		{"empty values dropped", []string{"", "a", ""}, 3, []string{"a"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &http.Request{PostForm: url.Values{"k": c.in}}
			got, ok := formValues(r, "k", c.max)
			if ok != c.wantOK || (ok && strings.Join(got, ",") != strings.Join(c.want, ",")) {
				t.Errorf("formValues = %q, %v; want %q, %v", got, ok, c.want, c.wantOK)
			}
		})
	}
}
