package store

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Publish is what the platform (or a CI pipeline starting a scan with an API key) said about a
// publish of a site: who published (a display name, or the platform's user id when it gives no
// name), when, to which domains, the commit deployed (a CI pipeline's), and the scan it started
// (empty when a scan of the site was already in flight).
type Publish struct {
	ID              string
	SiteID          string
	PlatformEventID string
	PublishedBy     string
	PublishedOn     time.Time
	Domains         []string
	Commit          string // a git commit id, lower-case hex; "" when none was given
	ScanID          string
}

// Publish limits: what the platform sends is shown on pages and in alerts, so it is kept short.
const (
	maxPublishedBy    = 100
	maxPublishDomains = 20
	maxDomainLen      = 253
)

// Normalize makes what a platform wrote safe to keep and show: names and domains that fail the
// display-text rule are dropped (a publish is a fact; refusing it would lose its scan), long
// ones cut, domains capped at 20.
func (p *Publish) Normalize() {
	p.PublishedBy = displayOrEmpty(p.PublishedBy, maxPublishedBy)
	p.PlatformEventID = displayOrEmpty(p.PlatformEventID, 200)
	var domains []string
	for _, d := range p.Domains {
		if d = displayOrEmpty(d, maxDomainLen); d != "" && len(domains) < maxPublishDomains {
			domains = append(domains, d)
		}
	}
	p.Domains = domains
	if p.Commit = strings.ToLower(strings.TrimSpace(p.Commit)); !ValidCommit(p.Commit) {
		p.Commit = ""
	}
}

// ValidCommit accepts a git commit id as CI systems name one: 7 to 64 hexadecimal digits (a
// short id, a SHA-1's 40 or a SHA-256's 64).
func ValidCommit(s string) bool {
	if len(s) < 7 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// ShortCommit is how pages show a commit: its first 7 digits, as git does.
func ShortCommit(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	return commit
}

// displayOrEmpty trims s, and cuts it to max runes; "" when it breaks the display-text rule.
func displayOrEmpty(s string, max int) string {
	s = strings.TrimSpace(s)
	if DisplayTextProblem(s) != "" {
		return ""
	}
	if utf8.RuneCountInString(s) > max {
		s = strings.TrimSpace(string([]rune(s)[:max]))
	}
	return s
}

// Line is how pages, the trend chart and alerts say who published: "Published by Ana, 24 Nov
// 14:02" (UTC), or "Published 24 Nov 14:02" when the platform named nobody, followed by
// " · commit 1a2b3c4" when a CI pipeline named the commit.
func (p Publish) Line() string {
	at := p.PublishedOn.UTC().Format("2 Jan 15:04")
	line := "Published " + at
	if p.PublishedBy != "" {
		line = "Published by " + p.PublishedBy + ", " + at
	}
	if p.Commit != "" {
		line += " · commit " + ShortCommit(p.Commit)
	}
	return line
}

// KindFollowUp is the job that scans a site again once its scan in flight has ended, because
// the site was published while that scan ran (EnqueueFollowUp): the scanner's worker enqueues
// the scan, and snoozes while the site still has one in flight.
const KindFollowUp = "followup"

// FollowUpJob is the args of a KindFollowUp job: the site to scan again.
type FollowUpJob struct {
	SiteID      string `json:"siteId"`
	WorkspaceID string `json:"workspaceId"`
}

func (FollowUpJob) Kind() string { return KindFollowUp }

// Workspace is the site's workspace: the claim shares the workers between workspaces by it.
func (f FollowUpJob) Workspace() string { return f.WorkspaceID }

// FollowUp is what EnqueueFollowUp did with a publish that came while a scan was in flight.
type FollowUp string

const (
	// FollowUpQueued: a follow-up scan will audit the publish once the scan in flight ends.
	FollowUpQueued FollowUp = "queued"
	// FollowUpJoined: the site's follow-up, queued by an earlier publish, will audit it.
	FollowUpJoined FollowUp = "joined"
	// FollowUpCovered: the scan in flight has not started; it will audit the publish itself.
	FollowUpCovered FollowUp = "covered"
)
