package scanner

import (
	"context"
	"errors"

	"sitepulse/store"

	"sitepulse/scanner/discover"
	"sitepulse/scanner/lighthouse"
	"sitepulse/scanner/platform"
)

// Opener opens a value sealed for a purpose and an owner (platform.Keys): a site's access
// setting, sealed bound to the site's id.
type Opener interface {
	OpenFor(purpose, sealed, owner string) (string, error)
}

// SigningAuditor is an auditor that can audit a site's private pages signed in (DESIGN §17):
// the local Lighthouse. PSI is not one, so a site with an access setting is never sent to it.
type SigningAuditor interface {
	SignIn(ctx context.Context, origin string, a store.Access) (*lighthouse.SignedIn, error)
}

var _ SigningAuditor = (*lighthouse.Runner)(nil)

// signIn is the auditor of one scan of a site with an access setting: the setting opened and,
// for a login form, signed in to now. Its error, recorded on every page of the scan, says why
// the scan cannot be audited signed in (starting lighthouse.SignInFailed) and carries no secret.
func (p *Pool) signIn(ctx context.Context, site store.Site, sealed store.SiteAccess) (Auditor, error) {
	signer, ok := p.auditorFor(site).(SigningAuditor)
	if !ok {
		return nil, errors.New(lighthouse.SignInFailed + "this site has an access setting, and only the local Lighthouse backend (AUDIT_BACKEND=lighthouse) audits signed in: PageSpeed Insights never receives a site's credentials")
	}
	if p.cfg.AccessKeys == nil {
		return nil, errors.New(lighthouse.SignInFailed + "the site's access setting cannot be opened: PLATFORM_TOKEN_KEY is not set")
	}
	origin := discover.SiteOrigin(site.Domain)
	plain, err := p.cfg.AccessKeys.OpenFor(platform.PurposeSiteAccess, sealed.Sealed, store.AccessSealedFor(site.ID, origin))
	if err != nil {
		return nil, errors.New(lighthouse.SignInFailed + "the site's access setting does not open: it was set for the site's former domain, or under a PLATFORM_TOKEN_KEY no longer listed; set it again on the site's edit page")
	}
	a, err := store.DecodeAccess(plain)
	if err != nil {
		return nil, errors.New(lighthouse.SignInFailed + err.Error() + ": set it again on the site's edit page")
	}
	s, err := signer.SignIn(ctx, origin, a)
	if err != nil {
		return nil, err
	}
	return s, nil
}
