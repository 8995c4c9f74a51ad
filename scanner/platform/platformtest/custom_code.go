package platformtest

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"sitepulse/scanner/platform"
)

// appliedCode is what GET /v2/sites/{site_id}/custom_code answers.
type appliedCode struct {
	Scripts     []platform.AppliedScript `json:"scripts"`
	LastUpdated string                   `json:"lastUpdated,omitempty"`
	CreatedOn   string                   `json:"createdOn,omitempty"`
}

var (
	semver      = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	displayName = regexp.MustCompile(`^[A-Za-z0-9]{1,50}$`)
	sri         = regexp.MustCompile(`^sha(256|384|512)-[A-Za-z0-9+/]+={0,2}$`)
)

// scoped refuses a token not granted scope, as the API does: 403 missing_scopes.
func (p *Platform) scoped(scope string, h http.HandlerFunc) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		p.mu.Lock()
		t := p.tokens[token]
		granted := t != nil && slices.Contains(t.scopes, scope)
		p.mu.Unlock()
		if !granted {
			apiError(w, http.StatusForbidden, "missing_scopes", "OAuthForbidden: You are missing the following scopes - "+scope)
			return
		}
		h(w, r)
	}
}

// introspect is GET /v2/token/introspect: the authorization's scopes, comma-separated.
func (p *Platform) introspect(w http.ResponseWriter, r *http.Request) {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	p.mu.Lock()
	t := p.tokens[token]
	var sites []string
	for _, s := range p.sites {
		sites = append(sites, s.ID)
	}
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"authorization": map[string]any{"id": "65" + token[:22], "createdOn": t.at.Format(time.RFC3339Nano), "lastUsed": time.Now().UTC().Format(time.RFC3339Nano),
			"grantType": "authorization_code", "rateLimit": 60, "scope": strings.Join(t.scopes, ","),
			"authorizedTo": map[string]any{"siteIds": sites, "workspaceIds": []string{}, "userIds": []string{}}},
		"application": map[string]any{"id": "65" + strings.Repeat("0", 22), "description": "SitePulse", "homepage": "https://sitepulse.example", "displayName": p.ClientID},
	})
}

func (p *Platform) listScripts(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.site(r.PathValue("site_id")) == nil {
		apiError(w, http.StatusNotFound, "resource_not_found", "Requested resource not found: The site cannot be found")
		return
	}
	list := slices.Clone(p.scripts[r.PathValue("site_id")])
	if list == nil {
		list = []platform.RegisteredScript{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"registeredScripts": list})
}

// registerHosted is POST /v2/sites/{site_id}/registered_scripts/hosted. The id is derived
// from the display name; a version once registered is immutable: registering it again is 409.
func (p *Platform) registerHosted(w http.ResponseWriter, r *http.Request) {
	var in platform.RegisteredScript
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&in); err != nil || !strings.HasPrefix(in.HostedLocation, "http") || !sri.MatchString(in.IntegrityHash) ||
		!semver.MatchString(in.Version) || !displayName.MatchString(in.DisplayName) || in.ID != "" {
		apiError(w, http.StatusBadRequest, "validation_error", "Validation Error: hostedLocation, integrityHash, version (semver) and displayName (1 to 50 letters and digits) are required")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	siteID := r.PathValue("site_id")
	if p.site(siteID) == nil {
		apiError(w, http.StatusNotFound, "resource_not_found", "Requested resource not found: The site cannot be found")
		return
	}
	in.ID = strings.ToLower(in.DisplayName)
	for _, s := range p.scripts[siteID] {
		if s.ID == in.ID && s.Version == in.Version {
			apiError(w, http.StatusConflict, "conflict", "Conflict: a script "+in.ID+" with version "+in.Version+" is already registered")
			return
		}
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	in.CreatedOn, in.LastUpdated = now, now
	p.scripts[siteID] = append(p.scripts[siteID], in)
	writeJSON(w, http.StatusCreated, in)
}

func (p *Platform) getCustomCode(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.site(r.PathValue("site_id")) == nil {
		apiError(w, http.StatusNotFound, "resource_not_found", "Requested resource not found: The site cannot be found")
		return
	}
	code := p.applied[r.PathValue("site_id")]
	if code.Scripts == nil {
		code.Scripts = []platform.AppliedScript{}
	}
	writeJSON(w, http.StatusOK, code)
}

// putCustomCode is PUT /v2/sites/{site_id}/custom_code: the app's scripts become exactly the
// body's, each a registered id and version, in the header or the footer.
func (p *Platform) putCustomCode(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Scripts []platform.AppliedScript `json:"scripts"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", "Bad Request: Request is malformed")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	siteID := r.PathValue("site_id")
	if p.site(siteID) == nil {
		apiError(w, http.StatusNotFound, "resource_not_found", "Requested resource not found: The site cannot be found")
		return
	}
	for _, s := range in.Scripts {
		known := slices.ContainsFunc(p.scripts[siteID], func(r platform.RegisteredScript) bool { return r.ID == s.ID && r.Version == s.Version })
		if !known || (s.Location != platform.LocationHeader && s.Location != platform.LocationFooter) {
			apiError(w, http.StatusBadRequest, "validation_error", "Validation Error: script "+s.ID+" "+s.Version+" is not registered to the site, or its location is not header or footer")
			return
		}
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	code := p.applied[siteID]
	if code.CreatedOn == "" {
		code.CreatedOn = now
	}
	code.Scripts, code.LastUpdated = in.Scripts, now
	if code.Scripts == nil {
		code.Scripts = []platform.AppliedScript{}
	}
	p.applied[siteID] = code
	writeJSON(w, http.StatusOK, code)
}

// AppliedScripts are the scripts the app applied to a site.
func (p *Platform) AppliedScripts(siteID string) []platform.AppliedScript {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.applied[siteID].Scripts)
}

// RegisteredScripts are the scripts registered to a site.
func (p *Platform) RegisteredScripts(siteID string) []platform.RegisteredScript {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.scripts[siteID])
}

// Body is the last body "METHOD /path" received (the API's calls only).
func (p *Platform) Body(key string) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.bodies[key])
}

// SeedScript registers a script to a site and, when applied is not nil, applies it, as another
// of the app's scripts the site had before.
func (p *Platform) SeedScript(siteID string, s platform.RegisteredScript, applied *platform.AppliedScript) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.ID = strings.ToLower(s.DisplayName)
	p.scripts[siteID] = append(p.scripts[siteID], s)
	if applied != nil {
		code := p.applied[siteID]
		code.Scripts = append(code.Scripts, *applied)
		p.applied[siteID] = code
	}
}
