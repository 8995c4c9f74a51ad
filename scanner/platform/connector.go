package platform

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"sitepulse/store"
)

// Store is what a Connector needs of the store.
type Store interface {
	store.Platform
	SitesIn(ctx context.Context, userID, workspaceID string) ([]store.Site, error)
	SiteByPlatformID(ctx context.Context, platformSiteID string) (store.Site, error)
	ScansOf(ctx context.Context, userID, siteID string, limit int) ([]store.Scan, error)
	EnqueueScan(ctx context.Context, s store.Scan, queue string, runAt time.Time) error
}

// Errors of a Connector, for the pages to explain.
var (
	// ErrNotConnected: the user has no connection.
	ErrNotConnected = errors.New("no platform connection")
	// ErrReconnect: the platform refused the token (revoked there), or it no longer opens
	// under PLATFORM_TOKEN_KEY; the connection is disabled until the user connects again.
	ErrReconnect = errors.New("the platform connection must be made again")
)

// Connector is the platform connection of SitePulse users: it keeps their sealed tokens in the
// store and imports, refreshes and disconnects their sites through the Client.
type Connector struct {
	Store  Store
	Client *Client
	Keys   *Keys
	// WebhookURL is {BASE_URL}/api/webhooks/platform, the target of every site_publish webhook.
	WebhookURL string
	// MaxSites is MAX_SITES_PER_WORKSPACE: an import past it creates no site (store.ErrLimit).
	MaxSites int
	// MaxPages is MAX_PAGES_PER_SCAN: a site keeps at most this many of its published pages
	// (a scan audits no more; its pages say how many there were); 0 means store.DefaultMaxPages.
	MaxPages int
	Log      *slog.Logger
	Now      func() time.Time
}

// Connect exchanges an authorization code and keeps the token, sealed, as the workspace's
// connection (a personal workspace's id is its user's, so older sealed tokens still open), with
// the scopes the platform says it granted. Scopes it could not read are kept as none: what
// needs one asks to connect again.
func (c *Connector) Connect(ctx context.Context, workspaceID, code, redirectURI string) error {
	token, err := c.Client.Exchange(ctx, code, redirectURI)
	if err != nil {
		return err
	}
	scopes, err := c.Client.Introspect(ctx, token)
	if err != nil {
		c.Log.Warn("platform: the granted scopes could not be read; kept as none", "workspace", workspaceID, "err", err)
	}
	sealed, err := c.Keys.Seal(token, workspaceID)
	if err != nil {
		return err
	}
	return c.Store.SavePlatformConnection(ctx, store.PlatformConnection{WorkspaceID: workspaceID, TokenSealed: sealed, Scopes: scopes, CreatedAt: c.Now()})
}

// token opens the user's token: ErrNotConnected, or ErrReconnect when the connection is disabled.
func (c *Connector) token(ctx context.Context, workspaceID string) (string, error) {
	conn, err := c.Store.PlatformConnection(ctx, workspaceID)
	if errors.Is(err, store.ErrNotFound) {
		return "", ErrNotConnected
	}
	if err != nil {
		return "", err
	}
	if conn.DisabledAt != nil {
		return "", ErrReconnect
	}
	token, err := c.Keys.Open(conn.TokenSealed, workspaceID)
	if err != nil {
		c.Log.Warn("platform: a sealed token does not open; the workspace's owner must reconnect", "workspace", workspaceID, "err", err)
		return "", c.disable(ctx, workspaceID)
	}
	return token, nil
}

// refused turns a 401 into ErrReconnect, disabling the connection; other errors pass.
func (c *Connector) refused(ctx context.Context, workspaceID string, err error) error {
	if !errors.Is(err, ErrUnauthorized) {
		return err
	}
	c.Log.Info("platform: the token was refused (revoked on the platform); connection disabled", "workspace", workspaceID)
	return c.disable(ctx, workspaceID)
}

func (c *Connector) disable(ctx context.Context, workspaceID string) error {
	if err := c.Store.DisablePlatformConnection(ctx, workspaceID, c.Now()); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return ErrReconnect
}

// Choice is a platform site on the import page.
type Choice struct {
	Site
	Domain string
	// Mine is the SitePulse site this user already imported it as; empty when not imported.
	Mine string
	// Unavailable: another SitePulse account's verified connection holds it.
	Unavailable bool
}

// Choices lists the platform sites the user's connection sees, each marked as already
// imported, available, or held by another account.
func (c *Connector) Choices(ctx context.Context, workspaceID string) ([]Choice, error) {
	token, err := c.token(ctx, workspaceID)
	if err != nil {
		return nil, err
	}
	sites, err := c.Client.Sites(ctx, token)
	if err != nil {
		return nil, c.refused(ctx, workspaceID, err)
	}
	out := make([]Choice, 0, len(sites))
	for _, s := range sites {
		ch := Choice{Site: s, Domain: s.Domain()}
		local, err := c.Store.SiteByPlatformID(ctx, s.ID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, err
		case local.WorkspaceID == workspaceID:
			ch.Mine = local.ID
		case local.PlatformVerified:
			ch.Unavailable = true
		}
		out = append(out, ch)
	}
	return out, nil
}

// Imported is the outcome of importing one platform site.
type Imported struct {
	PlatformID string
	Name       string
	SiteID     string // the SitePulse site; empty when the import failed
	Pages      int    // published pages saved: at most MaxPages
	Found      int    // published pages the platform lists
	Created    bool
	Scan       string // the first scan enqueued, if this import enqueued it
	Err        error  // why this site was not (fully) imported; a second try resumes
}

// Import imports the platform sites ticked by the user, each idempotently, in an order a second
// try resumes without duplicating: pages, then the site (upserted on its platform id), then the
// webhook (created only when the site's list lacks it), then a first scan when the site has
// none. Ids the connection does not see are ignored. ErrReconnect stops everything.
func (c *Connector) Import(ctx context.Context, userID, workspaceID string, platformIDs []string) ([]Imported, error) {
	token, err := c.token(ctx, workspaceID)
	if err != nil {
		return nil, err
	}
	sites, err := c.Client.Sites(ctx, token)
	if err != nil {
		return nil, c.refused(ctx, workspaceID, err)
	}
	byID := map[string]Site{}
	for _, s := range sites {
		byID[s.ID] = s
	}
	var out []Imported
	seen := map[string]bool{}
	for _, id := range platformIDs {
		ps, ok := byID[id]
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		res := c.importOne(ctx, userID, workspaceID, token, ps)
		if errors.Is(res.Err, ErrUnauthorized) {
			return out, c.refused(ctx, workspaceID, res.Err)
		}
		out = append(out, res)
	}
	return out, nil
}

func (c *Connector) importOne(ctx context.Context, userID, workspaceID, token string, ps Site) Imported {
	res := Imported{PlatformID: ps.ID, Name: ps.DisplayName}
	pages, err := c.Client.Pages(ctx, token, ps.ID)
	if err != nil {
		res.Err = err
		return res
	}
	paths := PublishedPaths(pages)
	saved := c.capPages(paths)
	name := ps.DisplayName
	if name == "" {
		name = ps.ShortName
	}
	// The store normalises and validates what the platform lists as it does what people type:
	// a site that breaks the rules is refused (store.ErrInvalid) and the others go on.
	site, created, err := c.Store.ImportPlatformSite(ctx, store.Site{ID: store.NewID(), UserID: userID, WorkspaceID: workspaceID, Name: name,
		Domain: ps.Domain(), PlatformSiteID: ps.ID, LastPublished: ps.LastPublished, Pages: saved, CreatedAt: c.Now()}, c.MaxSites)
	res.Found = len(paths)
	if err != nil {
		res.Err = err
		return res
	}
	res.SiteID, res.Created, res.Pages = site.ID, created, len(saved)
	hookID, err := c.ensureWebhook(ctx, token, ps.ID)
	if err != nil {
		res.Err = err
		return res
	}
	if hookID != site.PlatformWebhookID {
		if err := c.Store.SetPlatformWebhook(ctx, userID, site.ID, hookID); err != nil {
			res.Err = err
			return res
		}
	}
	scans, err := c.Store.ScansOf(ctx, userID, site.ID, 1)
	if err != nil {
		res.Err = err
		return res
	}
	if len(scans) == 0 {
		now := c.Now()
		scan := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerImport, CreatedAt: now,
			PagesFound: len(paths)}
		switch err := c.Store.EnqueueScan(ctx, scan, store.KindScan, now); {
		case errors.Is(err, store.ErrScanActive):
		case err != nil:
			res.Err = err
			return res
		default:
			res.Scan = scan.ID
		}
	}
	c.Log.Info("platform: site imported", "user", userID, "site", site.ID, "platform_site", ps.ID, "pages", len(saved), "pages_found", len(paths),
		"created", created, "webhook", hookID, "first_scan", res.Scan)
	return res
}

// capPages is the first MaxPages of a site's published paths: what a site keeps.
func (c *Connector) capPages(paths []string) []string {
	limit := c.MaxPages
	if limit <= 0 {
		limit = store.DefaultMaxPages
	}
	return paths[:min(len(paths), limit)]
}

// ensureWebhook returns the site's site_publish webhook to WebhookURL, creating it only when
// the platform's list lacks it. A create that failed with ErrUnavailable (5xx, timeout) may
// have been done, so each further try (up to the client's Attempts, after its backoff) lists
// again before creating: the platform never holds two, and the id kept is the one it holds.
func (c *Connector) ensureWebhook(ctx context.Context, token, platformSiteID string) (string, error) {
	for n := 1; ; n++ {
		hooks, err := c.Client.Webhooks(ctx, token, platformSiteID)
		if err != nil {
			return "", err
		}
		for _, h := range hooks {
			if h.TriggerType == TriggerSitePublish && h.URL == c.WebhookURL {
				return h.ID, nil
			}
		}
		h, err := c.Client.CreateWebhook(ctx, token, platformSiteID, TriggerSitePublish, c.WebhookURL)
		if err == nil || !errors.Is(err, ErrUnavailable) || n >= c.Client.cfg.Attempts {
			return h.ID, err
		}
		if serr := c.Client.cfg.Sleep(ctx, c.Client.cfg.Backoff(n)); serr != nil {
			return "", err
		}
	}
}

// RefreshPages reads a verified site's published pages from the platform and saves the first
// MaxPages, so a publish's scan audits pages published since the import; it returns them all. Any failure leaves the saved list;
// the caller audits that.
func (c *Connector) RefreshPages(ctx context.Context, site store.Site) ([]string, error) {
	if !site.PlatformVerified || site.PlatformSiteID == "" {
		return nil, ErrNotConnected
	}
	token, err := c.token(ctx, site.WorkspaceID)
	if err != nil {
		return nil, err
	}
	pages, err := c.Client.Pages(ctx, token, site.PlatformSiteID)
	if err != nil {
		return nil, c.refused(ctx, site.WorkspaceID, err)
	}
	paths := PublishedPaths(pages)
	if len(paths) == 0 {
		return nil, errors.New("the platform lists no published page")
	}
	if err := c.Store.SetSitePages(ctx, site.UserID, site.ID, site.PlatformSiteID, c.capPages(paths)); err != nil {
		return nil, err
	}
	return paths, nil // all of them: the scan caps the list and says how many there were
}

// Disconnect deletes the webhooks SitePulse registered, then forgets the token and unlinks the
// sites (they keep their history). A webhook the platform will not delete (token already
// revoked, platform down) does not stop it: it is counted in left and, once the sites are
// unlinked, its publishes find no site.
func (c *Connector) Disconnect(ctx context.Context, userID, workspaceID string) (deleted, left int, err error) {
	sites, err := c.Store.SitesIn(ctx, userID, workspaceID)
	if err != nil {
		return 0, 0, err
	}
	token, terr := c.token(ctx, workspaceID)
	for _, s := range sites {
		if !s.PlatformVerified || s.PlatformWebhookID == "" {
			continue
		}
		if terr != nil {
			left++
			continue
		}
		if err := c.Client.DeleteWebhook(ctx, token, s.PlatformWebhookID); err != nil {
			c.Log.Warn("platform: webhook not deleted on disconnect", "user", userID, "site", s.ID, "err", err)
			left++
			continue
		}
		deleted++
	}
	if err := c.Store.DisconnectPlatform(ctx, workspaceID); err != nil {
		return deleted, left, fmt.Errorf("disconnect: %w", err)
	}
	c.Log.Info("platform: disconnected", "user", userID, "webhooks_deleted", deleted, "webhooks_left", left)
	return deleted, left, nil
}
