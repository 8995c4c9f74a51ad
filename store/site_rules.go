package store

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrInvalid means what a person or a platform wrote breaks a rule of the domain: a site name,
// domain or page path. The error that carries it is an *InvalidError, which says which field
// and why in words for the person who wrote it; handlers answer 422 with them.
var ErrInvalid = errors.New("invalid")

// InvalidError is ErrInvalid for one field. Validate joins one per field in trouble
// (errors.Join); FieldErrors reads them back.
type InvalidError struct {
	Field   string // "name", "domain", "pages", "schedule"
	Message string // a sentence for the person who wrote the value
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Message }

// Is makes errors.Is(err, ErrInvalid) true, so Classify finds it.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// FieldErrors lists the *InvalidErrors in err (one, or several joined) by field; empty when
// err carries none.
func FieldErrors(err error) map[string]string {
	out := map[string]string{}
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *InvalidError:
			if _, seen := out[e.Field]; !seen {
				out[e.Field] = e.Message
			}
		case interface{ Unwrap() []error }: // errors.Join
			for _, x := range e.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }: // fmt.Errorf("...: %w", joined)
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

// InvalidMessage is the sentences of the *InvalidErrors in err, one per field, for surfaces
// that show one line (the REST error, the import page).
func InvalidMessage(err error) string {
	fields := FieldErrors(err)
	var out []string
	for _, f := range []string{"name", "domain", "pages", "schedule"} {
		if m, ok := fields[f]; ok {
			out = append(out, m)
			delete(fields, f)
		}
	}
	for _, m := range fields {
		out = append(out, m)
	}
	return strings.Join(out, " ")
}

// DuplicateError says that the owner already has a site on the same (normalised) domain: the
// message names it and the pages link to /sites/{SiteID}. It is an ErrConflict.
type DuplicateError struct {
	Domain string
	SiteID string // the owner's existing site
	Name   string
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("you already have a site for %s: %q", e.Domain, e.Name)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *DuplicateError) Is(target error) bool { return target == ErrConflict }

// SiteRules are the settings the rules of a site take from the configuration.
type SiteRules struct {
	// AllowPrivate is SCAN_ALLOW_PRIVATE: localhost and IP literals are accepted as domains.
	AllowPrivate bool
	// MaxPages is MAX_PAGES_PER_SCAN, the most saved page paths a site may have (a scan
	// audits no more); 0 means DefaultMaxPages.
	MaxPages int
}

// Limits of what a site may hold.
const (
	MaxSiteName     = 100  // characters
	MaxPagePath     = 2000 // bytes
	DefaultMaxPages = 50   // MAX_PAGES_PER_SCAN's default
	// DefaultMaxSites is MAX_SITES_PER_WORKSPACE's default: the size measured (issue 46, 2,000
	// sites, every read's p99 under 50 ms at 20 pages a site; .ci/README.md "Partitions: the size
	// it is for").
	DefaultMaxSites = 2000
	maxHost         = 253 // bytes of a DNS name (RFC 1035)
)

// PageLimit is the most saved page paths a site may have under the rules.
func (r SiteRules) PageLimit() int {
	if r.MaxPages <= 0 {
		return DefaultMaxPages
	}
	return r.MaxPages
}

// Normalize puts what was written into the stored form: the name trimmed, the domain in the
// form NormalizeDomain gives (left as written when it cannot be read: Validate says why), the
// page paths trimmed, blank ones dropped and each kept once, the schedule defaulted. It is
// idempotent, and every store write path runs it before Validate.
func (s *Site) Normalize() {
	s.Name = strings.TrimSpace(s.Name)
	s.Domain = strings.TrimSpace(s.Domain)
	if d, err := NormalizeDomain(s.Domain, SiteRules{AllowPrivate: true}); err == nil {
		s.Domain = d
	}
	pages := make([]string, 0, len(s.Pages))
	seen := make(map[string]bool, len(s.Pages)) // a 1 MiB form holds 250,000 short lines
	for _, p := range s.Pages {
		if p = strings.TrimSpace(p); p != "" && !seen[p] {
			seen[p] = true
			pages = append(pages, p)
		}
	}
	s.Pages = pages
	if s.Schedule == "" {
		s.Schedule = ScheduleOff
	}
}

// Validate checks a normalised site against the rules: a name of 1 to MaxSiteName characters
// that DisplayTextProblem accepts (it is shown on public reports), a domain NormalizeDomain accepts, at most r.PageLimit() page
// paths each of the shape CheckPagePath accepts, a known schedule. The errors, one per field,
// are *InvalidErrors joined.
func (s Site) Validate(r SiteRules) error {
	var errs []error
	if n := utf8.RuneCountInString(s.Name); n == 0 || n > MaxSiteName {
		errs = append(errs, &InvalidError{"name", fmt.Sprintf("Give the site a name of 1 to %d characters.", MaxSiteName)})
	} else if why := DisplayTextProblem(s.Name); why != "" { // shown on shared reports too
		errs = append(errs, &InvalidError{"name", "A site name " + why + "."})
	}
	if d, err := NormalizeDomain(s.Domain, r); err != nil {
		errs = append(errs, err)
	} else if d != s.Domain {
		errs = append(errs, &InvalidError{"domain", "The domain is not in its normal form " + strconv.Quote(d) + "."})
	}
	if n := len(s.Pages); n > r.PageLimit() {
		errs = append(errs, &InvalidError{"pages", fmt.Sprintf("At most %d page paths (MAX_PAGES_PER_SCAN): a scan audits no more. There are %d; remove %d, or leave the list empty to scan the sitemap.",
			r.PageLimit(), n, n-r.PageLimit())})
	} else {
		for _, p := range s.Pages {
			if err := CheckPagePath(p); err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	if s.Schedule != "" && !s.Schedule.Valid() {
		errs = append(errs, &InvalidError{"schedule", "Choose off, daily or weekly."})
	}
	return errors.Join(errs...)
}

// CheckPagePath accepts a page path of the shape "/pricing": one leading "/" (never "//host"
// or a backslash a browser reads as one), at most MaxPagePath bytes of valid UTF-8, no control
// characters (CR, LF), spaces or #fragment.
func CheckPagePath(p string) error {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.Contains(p, `\`) || len(p) > MaxPagePath ||
		!utf8.ValidString(p) || hasControl(p) || strings.ContainsAny(p, " \t#") {
		return &InvalidError{"pages", "Each page path starts with a single “/”, such as /pricing, and has no spaces or #fragment: “" + clip(p, 60) + "” does not."}
	}
	return nil
}

// ValidPages normalises and validates a page list alone, as Site.Validate would: the stores'
// SetSitePages.
func ValidPages(pages []string, r SiteRules) ([]string, error) {
	s := Site{Pages: pages}
	s.Normalize()
	err := FieldErrors(s.Validate(r))["pages"]
	if err != "" {
		return nil, &InvalidError{"pages", err}
	}
	return s.Pages, nil
}

// Validate checks what any budget must be, whatever its metric: a finite threshold of at least
// 0 and a known strategy ("" means both). Each metric's own range (scores 0-100, CLS 0-10,
// times in ms) belongs to the metric table in scanner/analysis, which the budgets form checks.
func (b Budget) Validate() error {
	if math.IsNaN(b.Threshold) || math.IsInf(b.Threshold, 0) || b.Threshold < 0 {
		return &InvalidError{"threshold", "A budget is a number of at least 0."}
	}
	if b.Strategy == "" || b.Strategy.Valid() {
		return nil
	}
	return &InvalidError{"strategy", "Choose both, mobile or desktop."}
}

// ValidBudgets checks every budget of a site's set (the stores' SetBudgets).
func ValidBudgets(budgets map[string]Budget) error {
	for metric, b := range budgets {
		if metric == "" || len(metric) > 64 {
			return &InvalidError{"metric", "A budget names a metric."}
		}
		if err := b.Validate(); err != nil {
			return fmt.Errorf("budget %s: %w", metric, err)
		}
	}
	return nil
}

// DomainKey is what makes two domains the same site: the host and port, whatever the scheme.
func DomainKey(domain string) string {
	return strings.TrimPrefix(strings.TrimPrefix(domain, "https://"), "http://")
}

// domainHelp ends every domain message: what is accepted.
const domainHelp = " Enter a host such as example.com; a pasted address such as https://example.com/pricing is reduced to its host."

// NormalizeDomain reads what a person typed or pasted as a site's domain, or what a platform
// listed, and returns it in the stored form: lower case; https:// (the assumed scheme), a
// default port, a trailing dot or slash, and any path, query or fragment dropped; a Unicode
// name in punycode (xn--); http:// kept, since it changes what is fetched. It refuses user
// names and passwords, other schemes, malformed names, and, unless r.AllowPrivate
// (SCAN_ALLOW_PRIVATE), localhost and IP literals. Errors are *InvalidErrors for "domain".
func NormalizeDomain(in string, r SiteRules) (string, error) {
	bad := func(msg string) (string, error) { return "", &InvalidError{"domain", msg + domainHelp} }
	in = strings.TrimSpace(in)
	for _, dot := range []string{"\u3002", "\uff0e", "\uff61"} { // ideographic full stops (IDNA)
		in = strings.ReplaceAll(in, dot, ".")
	}
	if in == "" || len(in) > 2000 || !utf8.ValidString(in) || hasControl(in) {
		return bad("Enter the site's domain.")
	}
	scheme, rest := "https", in
	if i := strings.Index(in, "://"); i >= 0 {
		scheme, rest = strings.ToLower(in[:i]), in[i+3:]
		if scheme != "http" && scheme != "https" {
			return bad("Only http and https addresses can be scanned.")
		}
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 { // a pasted URL: its host
		rest = rest[:i]
	}
	if strings.Contains(rest, "@") {
		return bad("An address with a user name or password (user@host) is not accepted.")
	}
	if strings.Contains(rest, "%") {
		if u, err := url.PathUnescape(rest); err == nil {
			rest = u
		}
	}
	host, port := rest, ""
	if _, err := netip.ParseAddr(rest); err == nil { // a bare IPv6 address has colons of its own
	} else if strings.HasPrefix(rest, "[") { // [v6] or [v6]:port
		end := strings.Index(rest, "]")
		if end < 0 || (rest[end+1:] != "" && !strings.HasPrefix(rest[end+1:], ":")) {
			return bad("“" + clip(in, 60) + "” is not a host name.")
		}
		host, port = rest[1:end], strings.TrimPrefix(rest[end+1:], ":")
	} else if i := strings.LastIndex(rest, ":"); i >= 0 {
		host, port = rest[:i], rest[i+1:]
		if port == "" {
			return bad("The port must be a number from 1 to 65535.")
		}
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strings.HasPrefix(port, "+") {
			return bad("The port must be a number from 1 to 65535.")
		}
		port = strconv.Itoa(n)
		if (scheme == "https" && n == 443) || (scheme == "http" && n == 80) {
			port = ""
		}
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	origin := ""
	if scheme == "http" {
		origin = "http://"
	}
	join := func(h string) string {
		if port != "" {
			return origin + h + ":" + port
		}
		return origin + h
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !r.AllowPrivate {
			return bad("An IP address cannot be scanned here (SCAN_ALLOW_PRIVATE is off).")
		}
		if ip.Is6() {
			return join("[" + ip.String() + "]"), nil
		}
		return join(ip.String()), nil
	}
	ascii, ok := toASCII(host)
	if !ok {
		return bad("“" + clip(in, 60) + "” is not a host name.")
	}
	if (ascii == "localhost" || strings.HasSuffix(ascii, ".localhost")) && !r.AllowPrivate {
		return bad("localhost cannot be scanned here (SCAN_ALLOW_PRIVATE is off).")
	}
	return join(ascii), nil
}

// toASCII is a lower-cased host name with each Unicode label in punycode (RFC 3492, the
// "xn--" ACE form of RFC 5890), checked as a DNS name: labels of 1 to 63 letters, digits and
// inner hyphens, at most maxHost bytes in all.
func toASCII(host string) (string, bool) {
	if host == "" {
		return "", false
	}
	labels := strings.Split(host, ".")
	for i, label := range labels {
		if label == "" {
			return "", false
		}
		if !isASCII(label) {
			for _, c := range label {
				if !unicode.IsLetter(c) && !unicode.IsDigit(c) && !unicode.IsMark(c) && c != '-' {
					return "", false
				}
			}
			enc, ok := punycode(label)
			if !ok {
				return "", false
			}
			label = "xn--" + enc
		}
		if len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return "", false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", false
			}
		}
		labels[i] = label
	}
	out := strings.Join(labels, ".")
	return out, len(out) <= maxHost
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Punycode parameters (RFC 3492 §5).
const (
	pcBase        = 36
	pcTMin        = 1
	pcTMax        = 26
	pcSkew        = 38
	pcDamp        = 700
	pcInitialBias = 72
	pcInitialN    = 128
)

// punycode encodes one label (RFC 3492 §6.3): its basic code points, a "-" when there were
// any, then the deltas of the others as generalised variable-length integers. ok is false on
// overflow, which a label of at most a few hundred runes cannot reach.
func punycode(label string) (string, bool) {
	runes := []rune(label)
	out := make([]byte, 0, len(label)+8)
	for _, r := range runes {
		if r < 0x80 {
			out = append(out, byte(r))
		}
	}
	b := len(out)
	h := b
	if b > 0 {
		out = append(out, '-')
	}
	const maxInt = int(^uint32(0) >> 1)
	n, delta, bias := pcInitialN, 0, pcInitialBias
	for h < len(runes) {
		m := maxInt
		for _, r := range runes {
			if int(r) >= n && int(r) < m {
				m = int(r)
			}
		}
		if m-n > (maxInt-delta)/(h+1) {
			return "", false
		}
		delta += (m - n) * (h + 1)
		n = m
		for _, r := range runes {
			if int(r) < n {
				if delta++; delta > maxInt-1 {
					return "", false
				}
			}
			if int(r) != n {
				continue
			}
			q := delta
			for k := pcBase; ; k += pcBase {
				t := min(max(k-bias, pcTMin), pcTMax)
				if q < t {
					break
				}
				out = append(out, pcDigit(t+(q-t)%(pcBase-t)))
				q = (q - t) / (pcBase - t)
			}
			out = append(out, pcDigit(q))
			bias = pcAdapt(delta, h+1, h == b)
			delta = 0
			h++
		}
		delta++
		n++
	}
	return string(out), true
}

// pcAdapt is the bias adaptation of RFC 3492 §6.1.
func pcAdapt(delta, numPoints int, first bool) int {
	if first {
		delta /= pcDamp
	} else {
		delta /= 2
	}
	delta += delta / numPoints
	k := 0
	for delta > ((pcBase-pcTMin)*pcTMax)/2 {
		delta /= pcBase - pcTMin
		k += pcBase
	}
	return k + (pcBase-pcTMin+1)*delta/(delta+pcSkew)
}

// pcDigit is the basic code point of a digit 0-35: a-z then 0-9.
func pcDigit(d int) byte {
	if d < 26 {
		return byte('a' + d)
	}
	return byte('0' + d - 26)
}

// hasControl reports control characters (C0, DEL, C1) and the bidirectional overrides and
// isolates that make text read differently from what it is.
func hasControl(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsControl(r) || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069)
	}) >= 0
}

// clip shortens s to n characters for a message.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// DisplayDomain is a stored (ASCII) domain as people read it: each "xn--" label decoded to
// Unicode (bücher.de, not xn--bcher-kva.de). A label stays in punycode when it does not decode
// and encode back to itself, mixes scripts the way look-alike domains do (MixedScripts), or
// holds a character DisplayTextProblem refuses: then the ASCII form is the honest one.
func DisplayDomain(domain string) string {
	if !strings.Contains(domain, "xn--") {
		return domain
	}
	labels := strings.Split(domain, ".")
	for i, label := range labels {
		if !strings.HasPrefix(label, "xn--") {
			continue
		}
		u, ok := unpunycode(label[len("xn--"):])
		if !ok || MixedScripts(u) || DisplayTextProblem(u) != "" {
			continue
		}
		if back, ok := punycode(u); !ok || back != label[len("xn--"):] {
			continue
		}
		labels[i] = u
	}
	return strings.Join(labels, ".")
}

// unpunycode decodes one label's punycode (RFC 3492 §6.2); ok is false for anything that is
// not well-formed.
func unpunycode(s string) (string, bool) {
	var out []rune
	if i := strings.LastIndexByte(s, '-'); i >= 0 {
		for j := 0; j < i; j++ {
			if s[j] >= 0x80 {
				return "", false
			}
			out = append(out, rune(s[j]))
		}
		s = s[i+1:]
	}
	const maxInt = int(^uint32(0) >> 1)
	n, bias, i := pcInitialN, pcInitialBias, 0
	for pos := 0; pos < len(s); {
		oldi, w := i, 1
		for k := pcBase; ; k += pcBase {
			if pos >= len(s) {
				return "", false
			}
			c := s[pos]
			pos++
			var digit int
			switch {
			case c >= 'a' && c <= 'z':
				digit = int(c - 'a')
			case c >= 'A' && c <= 'Z':
				digit = int(c - 'A')
			case c >= '0' && c <= '9':
				digit = int(c-'0') + 26
			default:
				return "", false
			}
			if digit > (maxInt-i)/w {
				return "", false
			}
			i += digit * w
			t := min(max(k-bias, pcTMin), pcTMax)
			if digit < t {
				break
			}
			if w > maxInt/(pcBase-t) {
				return "", false
			}
			w *= pcBase - t
		}
		bias = pcAdapt(i-oldi, len(out)+1, oldi == 0)
		if i/(len(out)+1) > maxInt-n {
			return "", false
		}
		n += i / (len(out) + 1)
		i %= len(out) + 1
		if n > unicode.MaxRune || n >= 0xD800 && n <= 0xDFFF {
			return "", false
		}
		out = append(out[:i], append([]rune{rune(n)}, out[i:]...)...)
		i++
	}
	return string(out), true
}
