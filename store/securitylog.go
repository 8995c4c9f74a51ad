package store

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// LogEvent is one line of a workspace's security log (docs/audit-log.md): who did what, to
// what, when and from where. It is append-only: the store has no path that changes or deletes
// a line but PruneLog's retention. Details is small and never holds a secret (an API key, a
// password, a token, a cookie, a channel URL): callers put ids, names, roles and kinds in it.
// Not AuditLedger, which counts the page audits a workspace spent.
type LogEvent struct {
	// Seq orders the log: assigned by the store, increasing in the order lines were appended.
	Seq         int64
	WorkspaceID string
	// ActorID and ActorEmail are who acted, the e-mail as it was at the time; both empty for
	// the system, ActorID empty for a failed sign-in's unknown actor.
	ActorID    string
	ActorEmail string
	Kind       string // one of LogKinds
	Target     string // what it was done to: an e-mail, a site's name, a key's name
	Details    map[string]string
	// IP is the client's address as the service sees it (the trusted-proxy rule), UserAgent
	// its User-Agent, truncated to MaxLogUserAgent runes.
	IP        string
	UserAgent string
	At        time.Time
}

// Bounds of a log line, so a hostile User-Agent or name cannot grow the log without limit.
const (
	MaxLogUserAgent = 200
	MaxLogTarget    = 300
	MaxLogDetail    = 300 // runes of one detail's value
	MaxLogDetails   = 20
	// MaxLogPage is the most lines one LogOf call answers.
	MaxLogPage = 500
)

// DefaultLogRetentionDays is how long the log keeps a line unless AUDIT_LOG_RETENTION_DAYS says.
const DefaultLogRetentionDays = 400

var logDetailRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]{0,31}$`)

// Normalize truncates what comes from the client or a person to the bounds and drops control
// characters from it, so a line always fits the log and a CSV cell.
func (e *LogEvent) Normalize() {
	e.Target = logClip(e.Target, MaxLogTarget)
	e.UserAgent = logClip(e.UserAgent, MaxLogUserAgent)
	e.IP = logClip(e.IP, 64)
	e.ActorEmail = logClip(e.ActorEmail, 320)
	if e.Details == nil {
		e.Details = map[string]string{}
	}
	for k, v := range e.Details {
		e.Details[k] = logClip(v, MaxLogDetail)
	}
	e.At = Now(e.At)
}

// logClip keeps the first n runes of s, with control characters (a newline in a User-Agent)
// made spaces and invalid UTF-8 replaced.
func logClip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n])
	}
	return s
}

// Validate refuses a line the log cannot hold: no workspace, an unknown-shaped kind, too many
// details.
func (e LogEvent) Validate() error {
	switch {
	case !ValidUUID(e.WorkspaceID):
		return invalid("workspace", "not a workspace id")
	case !KnownLogKind(e.Kind):
		return invalid("kind", fmt.Sprintf("%q is not an event kind", e.Kind))
	case len(e.Details) > MaxLogDetails:
		return invalid("details", "too many details")
	case e.ActorID != "" && !ValidUUID(e.ActorID):
		return invalid("actor", "not a user id")
	}
	for k := range e.Details {
		if !logDetailRE.MatchString(k) {
			return invalid("details", fmt.Sprintf("%q is not a detail name", k))
		}
	}
	return nil
}

// LogFilter selects lines of one workspace's log, newest first. Kind is a kind, or a prefix
// ending in "." ("sso." for every SSO event); Actor an actor's e-mail (as recorded, compared
// without case) or user id; From and To bound At, From included, To excluded (zero: open).
// After continues a page: lines strictly older than it, in the log's order (keyset).
type LogFilter struct {
	WorkspaceID string
	Kind        string
	Actor       string
	From, To    time.Time
	After       *LogCursor
	Limit       int
}

// LogCursor is where a page of the log ended: its last line's At and Seq.
type LogCursor struct {
	At  time.Time
	Seq int64
}

// Match answers whether e passes f's conditions (not its cursor or limit): the memory store's
// filter, and the one the contract tests hold Postgres to.
func (f LogFilter) Match(e LogEvent) bool {
	if e.WorkspaceID != f.WorkspaceID {
		return false
	}
	if f.Kind != "" {
		if strings.HasSuffix(f.Kind, ".") {
			if !strings.HasPrefix(e.Kind, f.Kind) {
				return false
			}
		} else if e.Kind != f.Kind {
			return false
		}
	}
	if f.Actor != "" && !strings.EqualFold(e.ActorEmail, f.Actor) && e.ActorID != f.Actor {
		return false
	}
	if !f.From.IsZero() && e.At.Before(f.From) {
		return false
	}
	if !f.To.IsZero() && !e.At.Before(f.To) {
		return false
	}
	return true
}

// Before answers whether e comes after c in the log's order (newest first).
func (c LogCursor) Before(e LogEvent) bool {
	return e.At.Before(c.At) || e.At.Equal(c.At) && e.Seq < c.Seq
}

// PageLimit is f.Limit bounded to [1, MaxLogPage], 50 when unset.
func (f LogFilter) PageLimit() int {
	switch {
	case f.Limit <= 0:
		return 50
	case f.Limit > MaxLogPage:
		return MaxLogPage
	}
	return f.Limit
}

// SecurityLog is the append-only security log of every workspace (DESIGN §21).
type SecurityLog interface {
	// AppendLog appends lines, each Normalized and Validated (a FieldError refuses them all),
	// in one transaction, in order, and answers them as stored (with their Seq).
	AppendLog(ctx context.Context, events ...LogEvent) ([]LogEvent, error)
	// LogOf lists the lines f selects, newest first (At, then Seq), at most f.PageLimit().
	LogOf(ctx context.Context, f LogFilter) ([]LogEvent, error)
	// PruneLog deletes the lines older than before, of every workspace: the log's only delete
	// (its retention, AUDIT_LOG_RETENTION_DAYS). It answers how many it deleted.
	PruneLog(ctx context.Context, before time.Time) (int, error)
}
