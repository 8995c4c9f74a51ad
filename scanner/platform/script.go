package platform

import (
	"context"
	"errors"
	"fmt"

	"sitepulse/store"
)

// ErrScope: the connection was made before SitePulse asked for custom code (or the platform
// refused the scope): the owner connects again to grant it.
var ErrScope = errors.New("the platform connection must be made again to allow adding the script")

// HostedScript is the script a site gets: where it is served, the SRI hash of its exact bytes,
// and the attributes of its tag (the site's data-site).
type HostedScript struct {
	DisplayName string // 1 to 50 letters and digits
	URL         string
	Integrity   string // "sha384-..."
	Attributes  map[string]any
}

// scriptToken opens the workspace's token for a site's script, checking what it was granted.
func (c *Connector) scriptToken(ctx context.Context, site store.Site) (string, error) {
	if !site.PlatformVerified || site.PlatformSiteID == "" {
		return "", ErrNotConnected
	}
	conn, err := c.Store.PlatformConnection(ctx, site.WorkspaceID)
	if errors.Is(err, store.ErrNotFound) {
		return "", ErrNotConnected
	}
	if err != nil {
		return "", err
	}
	if conn.DisabledAt == nil && !conn.Granted(ScriptScopes...) {
		return "", ErrScope
	}
	return c.token(ctx, site.WorkspaceID)
}

// scriptFault maps a platform refusal: a 401 disables the connection, a missing scope asks
// for a new connection.
func (c *Connector) scriptFault(ctx context.Context, workspaceID string, err error) error {
	if errors.Is(err, ErrMissingScope) {
		return fmt.Errorf("%w: %v", ErrScope, err)
	}
	return c.refused(ctx, workspaceID, err)
}

// InstallScript adds the script to a connected site's custom code, in the footer, and records
// it on the site for userID. Idempotent and in an order a second try resumes: the version
// (ScriptVersion) is registered only when the site's registered scripts lack it (a
// registration that failed or was refused as existing lists again), then the site's applied
// scripts are read and written back with ours in place of any version of it before, the others
// as they were; only then is it recorded. A failure leaves the site's custom code as it was
// (or, after a PUT whose answer was lost, with ours applied: the next try finds it) and
// nothing recorded. It takes effect when the site is next published.
func (c *Connector) InstallScript(ctx context.Context, userID string, site store.Site, s HostedScript) (store.PlatformScript, error) {
	token, err := c.scriptToken(ctx, site)
	if err != nil {
		return store.PlatformScript{}, err
	}
	want := RegisteredScript{DisplayName: s.DisplayName, HostedLocation: s.URL, IntegrityHash: s.Integrity, Version: ScriptVersion(s.URL, s.Integrity)}
	reg, err := c.ensureRegistered(ctx, token, site.PlatformSiteID, want)
	if err != nil {
		return store.PlatformScript{}, c.scriptFault(ctx, site.WorkspaceID, err)
	}
	applied, err := c.Client.SiteCustomCode(ctx, token, site.PlatformSiteID)
	if err != nil {
		return store.PlatformScript{}, c.scriptFault(ctx, site.WorkspaceID, err)
	}
	scripts := withoutScript(applied, reg.ID)
	scripts = append(scripts, AppliedScript{ID: reg.ID, Location: LocationFooter, Version: reg.Version, Attributes: s.Attributes})
	if err := c.Client.SetSiteCustomCode(ctx, token, site.PlatformSiteID, scripts); err != nil {
		return store.PlatformScript{}, c.scriptFault(ctx, site.WorkspaceID, err)
	}
	rec := store.PlatformScript{ID: reg.ID, Version: reg.Version, AppliedAt: store.Now(c.Now())}
	if err := c.Store.SetPlatformScript(ctx, userID, site.ID, &rec); err != nil {
		return store.PlatformScript{}, err
	}
	c.Log.Info("platform: beacon script applied", "user", userID, "site", site.ID, "platform_site", site.PlatformSiteID, "script", reg.ID, "version", reg.Version)
	return rec, nil
}

// RemoveScript takes the site's script (every version of its id) out of its custom code,
// keeping the site's other scripts, and forgets it on the site. The registration stays (the
// platform keeps registered versions). A site without a recorded script changes nothing there.
func (c *Connector) RemoveScript(ctx context.Context, userID string, site store.Site) error {
	if site.PlatformScript == nil {
		return nil
	}
	token, err := c.scriptToken(ctx, site)
	if err != nil {
		return err
	}
	applied, err := c.Client.SiteCustomCode(ctx, token, site.PlatformSiteID)
	if err != nil {
		return c.scriptFault(ctx, site.WorkspaceID, err)
	}
	if rest := withoutScript(applied, site.PlatformScript.ID); len(rest) != len(applied) {
		if err := c.Client.SetSiteCustomCode(ctx, token, site.PlatformSiteID, rest); err != nil {
			return c.scriptFault(ctx, site.WorkspaceID, err)
		}
	}
	if err := c.Store.SetPlatformScript(ctx, userID, site.ID, nil); err != nil {
		return err
	}
	c.Log.Info("platform: beacon script removed", "user", userID, "site", site.ID, "platform_site", site.PlatformSiteID)
	return nil
}

// ensureRegistered returns the site's registration of want's name and version, registering it
// when the list lacks it. A registration refused as existing, or failed with ErrUnavailable
// (it may be done), lists again.
func (c *Connector) ensureRegistered(ctx context.Context, token, platformSiteID string, want RegisteredScript) (RegisteredScript, error) {
	find := func() (RegisteredScript, bool, error) {
		list, err := c.Client.RegisteredScripts(ctx, token, platformSiteID)
		for _, r := range list {
			if r.DisplayName == want.DisplayName && r.Version == want.Version {
				return r, true, nil
			}
		}
		return RegisteredScript{}, false, err
	}
	if r, ok, err := find(); ok || err != nil {
		return r, err
	}
	r, err := c.Client.RegisterHostedScript(ctx, token, platformSiteID, want)
	if err == nil || !(versionTaken(err) || errors.Is(err, ErrUnavailable)) {
		return r, err
	}
	if r, ok, ferr := find(); ok || ferr != nil {
		return r, ferr
	}
	return RegisteredScript{}, err
}

// withoutScript is scripts without any version of id, in their order.
func withoutScript(scripts []AppliedScript, id string) []AppliedScript {
	out := []AppliedScript{}
	for _, s := range scripts {
		if s.ID != id {
			out = append(out, s)
		}
	}
	return out
}
