package handlers

import (
	"context"
	"errors"
	"net/http"

	"sitepulse/handlers/beacon"
	"sitepulse/scanner/platform"
	"sitepulse/store"
)

// beaconScriptName is the display name the beacon is registered under on the platform (1 to
// 50 letters and digits); the platform derives the script's id from it.
const beaconScriptName = "SitePulse"

// beaconScript is the site's hosted script as the platform registers and applies it: the
// served bytes' integrity hash, the site's public id as its data-site attribute.
func (s *server) beaconScript(key string) platform.HostedScript {
	return platform.HostedScript{DisplayName: beaconScriptName, URL: s.BaseURL + "/beacon/v1.js", Integrity: beacon.Script.Integrity,
		Attributes: map[string]any{"data-site": key}}
}

// beaconPlatform fills in the beacon card's one-click part for a site imported from the
// platform through a connection: what was applied, or why the button cannot work (the
// connection lacks the custom code scopes or was refused: reconnect).
func (s *server) beaconPlatform(ctx context.Context, site store.Site, v *beaconView) error {
	if s.Platform == nil || !site.PlatformVerified || site.PlatformSiteID == "" {
		return nil
	}
	conn, err := s.Connections.PlatformConnection(ctx, site.WorkspaceID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	v.Platform, v.Installed = true, site.PlatformScript
	v.Reconnect = conn.DisabledAt != nil
	v.NeedsScope = !v.Reconnect && !conn.Granted(platform.ScriptScopes...)
	v.Current = site.PlatformScript != nil && site.PlatformScript.Version == platform.ScriptVersion(s.BaseURL+"/beacon/v1.js", beacon.Script.Integrity)
	_, err = s.authorize(ctx, site.WorkspaceID, store.ActManage)
	v.CanConnect = err == nil
	v.ConnectURL = "/platform/connect"
	if site.WorkspaceID != store.PersonalWorkspace(visitorFrom(ctx).User.ID) {
		v.ConnectURL += "?workspace=" + site.WorkspaceID
	}
	return nil
}

// handleBeaconInstall adds the beacon script to the site's custom code on the platform
// ("Add to Webflow"): registered once per version, applied in the footer beside the site's
// other scripts, recorded; it runs once the site is next published there.
func (s *server) handleBeaconInstall() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, ok := s.platformSite(w, r)
		if !ok {
			return
		}
		ctx, uid := r.Context(), visitorFrom(r.Context()).User.ID
		key, err := s.Beacons.BeaconKey(ctx, uid, site.ID)
		if err != nil {
			s.error(w, r, err, "There is no such site in your account.")
			return
		}
		rec, err := s.Platform.InstallScript(ctx, uid, site, s.beaconScript(key))
		if err != nil {
			s.beaconFault(w, r, site, err)
			return
		}
		s.audit(ctx, site.WorkspaceID, store.LogBeaconInstalled, site.Name, map[string]string{"siteId": site.ID,
			"platformSiteId": site.PlatformSiteID, "script": rec.ID, "version": rec.Version})
		http.Redirect(w, r, "/sites/"+site.ID+"/edit?done=beacon-installed#beacon", http.StatusSeeOther)
	})
}

// handleBeaconRemove takes SitePulse's script out of the site's custom code on the platform,
// leaving the site's other scripts.
func (s *server) handleBeaconRemove() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, ok := s.platformSite(w, r)
		if !ok {
			return
		}
		if site.PlatformScript == nil {
			http.Redirect(w, r, "/sites/"+site.ID+"/edit#beacon", http.StatusSeeOther)
			return
		}
		if err := s.Platform.RemoveScript(r.Context(), visitorFrom(r.Context()).User.ID, site); err != nil {
			s.beaconFault(w, r, site, err)
			return
		}
		s.audit(r.Context(), site.WorkspaceID, store.LogBeaconRemoved, site.Name, map[string]string{"siteId": site.ID,
			"platformSiteId": site.PlatformSiteID, "script": site.PlatformScript.ID, "version": site.PlatformScript.Version})
		http.Redirect(w, r, "/sites/"+site.ID+"/edit?done=beacon-removed#beacon", http.StatusSeeOther)
	})
}

// platformSite is the visitor's site of the request (ownSite) when the beacon can be added to it
// on the platform (beaconOnPlatform); otherwise the answer is written.
func (s *server) platformSite(w http.ResponseWriter, r *http.Request) (store.Site, bool) {
	site, ok := s.ownSite(w, r)
	return site, ok && s.beaconOnPlatform(w, r, site)
}

// beaconOnPlatform answers the edit page with 409 when the site is not one the platform
// connection imported (or the beacon is off): it has only the tag to paste.
func (s *server) beaconOnPlatform(w http.ResponseWriter, r *http.Request, site store.Site) bool {
	if s.Platform != nil && s.Beacons != nil && site.PlatformVerified && site.PlatformSiteID != "" {
		return true
	}
	f := formOf(site)
	f.beaconErr = "This site was not imported from Webflow through a connection, so SitePulse cannot add the script there: paste the tag below."
	s.editPage(w, r, http.StatusConflict, site, f, nil)
	return false
}

// beaconFault answers a failed install or removal on the edit page: reconnect (409) when the
// connection lacks the scope or was refused, 502 when the platform failed; nothing was
// recorded and the site's custom code on the platform is as it was.
func (s *server) beaconFault(w http.ResponseWriter, r *http.Request, site store.Site, err error) {
	f := formOf(site)
	status := http.StatusConflict
	switch {
	case errors.Is(err, platform.ErrScope):
		f.beaconErr = "SitePulse's connection to Webflow was made before it asked to add scripts. Reconnect to allow SitePulse to add the script (nothing else changes), or paste the tag below."
	case errors.Is(err, platform.ErrReconnect):
		f.beaconErr = "Webflow no longer accepts SitePulse's access (the app was removed or its access revoked there). Reconnect, then try again."
	case errors.Is(err, platform.ErrNotConnected):
		f.beaconErr = "This workspace is no longer connected to Webflow. Connect it again, or paste the tag below."
	case errors.Is(err, platform.ErrNotFound):
		f.beaconErr = "Webflow does not know this site any more (deleted or moved there). Nothing was changed."
		status = http.StatusNotFound
	case errors.Is(err, store.ErrNotFound):
		s.error(w, r, err, "There is no such site in your account.")
		return
	default:
		s.Log.Warn("platform: beacon script not changed", "user", visitorFrom(r.Context()).User.ID, "site", site.ID, "err", err)
		f.beaconErr = "Webflow could not be reached or is limiting requests. Nothing was changed on the site; try again in a moment."
		status = http.StatusBadGateway
	}
	s.editPage(w, r, status, site, f, nil)
}
