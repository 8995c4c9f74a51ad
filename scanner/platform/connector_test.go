package platform_test

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"sitepulse/scanner/platform"
	"sitepulse/scanner/platform/platformtest"
	"sitepulse/store"
	"sitepulse/store/memory"
)

const acme = "6258612d1ee792848f805dd0" // platformtest.Sample's second site

// connected is a Connector to the double with a user whose code was exchanged.
func connected(t *testing.T) (*platform.Connector, *platformtest.Platform, string) {
	return connectedWith(t, nil)
}

// connectedWith is connected with the app registered for appScopes on the platform (nil: all
// it asks).
func connectedWith(t *testing.T, appScopes []string) (*platform.Connector, *platformtest.Platform, string) {
	t.Helper()
	ctx := context.Background()
	double := platformtest.New(t, "app", "secret")
	double.Sample()
	double.AppScopes = appScopes
	st := memory.New()
	user := store.User{ID: store.NewID(), Email: "ada@example.com", CreatedAt: time.Now()}
	if err := st.CreateUser(ctx, user); err != nil {
		t.Fatal(err)
	}
	c := &platform.Connector{Store: st, Keys: platform.RandomKeys(), WebhookURL: "http://sitepulse.test/api/webhooks/platform",
		MaxSites: 50, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now,
		Client: platform.NewClient(platform.ClientConfig{APIURL: double.URL, ClientID: "app", ClientSecret: "secret",
			Sleep: func(context.Context, time.Duration) error { return nil }})}
	const redirect = "http://sitepulse.test/platform/callback"
	back, err := double.Approve(double.AuthorizeURL() + "?" + url.Values{"client_id": {"app"}, "response_type": {"code"},
		"redirect_uri": {redirect}, "state": {"s"}, "scope": {platform.Scopes}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(back)
	if err := c.Connect(ctx, user.ID, u.Query().Get("code"), redirect); err != nil {
		t.Fatal(err)
	}
	return c, double, user.ID
}

// TestImportWebhookCreatedThenFailed: the platform creates the webhook but answers 500 (as
// after a timeout). The create is not repeated blindly: the list shows the webhook, so the
// platform holds one and the site keeps its id, which a disconnect deletes.
func TestImportWebhookCreatedThenFailed(t *testing.T) {
	ctx := context.Background()
	c, double, userID := connected(t)
	create := "POST /v2/sites/" + acme + "/webhooks"
	double.FailAfterCall(create, 1)
	res, err := c.Import(ctx, userID, userID, []string{acme})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("import %+v, %v", res, err)
	}
	hooks := double.Webhooks(acme)
	if len(hooks) != 1 || double.Calls(create) != 1 {
		t.Fatalf("%d creates left webhooks %+v, want 1 create and 1 webhook", double.Calls(create), hooks)
	}
	sites, _ := c.Store.SitesIn(ctx, userID, userID)
	if len(sites) != 1 || sites[0].PlatformWebhookID != hooks[0].ID {
		t.Fatalf("site %+v keeps another id than the platform's %s", sites, hooks[0].ID)
	}
	if deleted, left, err := c.Disconnect(ctx, userID, userID); err != nil || deleted != 1 || left != 0 || len(double.Webhooks(acme)) != 0 {
		t.Errorf("disconnect deleted %d, left %d (%v); platform holds %+v", deleted, left, err, double.Webhooks(acme))
	}
}

// TestImportWebhookNotCreatedIsTriedAgain: a create refused with a 500 (not done) is tried
// again after listing, within the client's attempts.
func TestImportWebhookNotCreatedIsTriedAgain(t *testing.T) {
	ctx := context.Background()
	c, double, userID := connected(t)
	create := "POST /v2/sites/" + acme + "/webhooks"
	double.FailCall(create, 2)
	res, err := c.Import(ctx, userID, userID, []string{acme})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("import %+v, %v", res, err)
	}
	list := "GET /v2/sites/" + acme + "/webhooks"
	if n := len(double.Webhooks(acme)); n != 1 || double.Calls(create) != 3 || double.Calls(list) != 3 {
		t.Errorf("%d webhooks after %d creates and %d lists, want 1 after 3 and 3", n, double.Calls(create), double.Calls(list))
	}
}
