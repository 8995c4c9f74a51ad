// Package securitylog records and writes out the workspaces' security log (docs/audit-log.md):
// the one Recorder every surface calls, the request's origin it reads from the context, and the
// export formats (CSV, JSON Lines). The log itself is the store's (store.SecurityLog).
package securitylog

import (
	"context"
	"log/slog"
	"time"

	"sitepulse/store"
)

// Store is what recording needs: appending, the actor's e-mail at the time, and an account's
// workspaces (an account event goes to each of them).
type Store interface {
	AppendLog(ctx context.Context, events ...store.LogEvent) ([]store.LogEvent, error)
	UserByID(ctx context.Context, id string) (store.User, error)
	WorkspacesOf(ctx context.Context, userID string) ([]store.Workspace, error)
}

// Recorder appends events to the security log. Built once in run() and handed to every surface
// that records. A failure to record is logged and never undoes what was done.
type Recorder struct {
	Store Store
	Now   func() time.Time
	Log   *slog.Logger
	// Appended, when set, is called with the lines just appended (the audit webhook's
	// delivery planning); its error is logged.
	Appended func(ctx context.Context, lines []store.LogEvent) error
}

// Record appends one workspace's event. What e leaves empty is filled in: At from the clock,
// the actor from the request's principal (store.UserIDFrom) and their e-mail now, the address
// and User-Agent from the request's Origin.
func (r *Recorder) Record(ctx context.Context, e store.LogEvent) {
	if r == nil {
		return
	}
	r.append(ctx, []store.LogEvent{r.fill(ctx, e)})
}

// RecordAccount appends an account's event (sign-in, a failed password, sign-out, password
// change or reset, an API key of the personal workspace...) to the log of every workspace
// e.ActorID (else the request's user) belongs to: each workspace's owners see what their
// members' accounts went through. e.WorkspaceID is ignored.
func (r *Recorder) RecordAccount(ctx context.Context, e store.LogEvent) {
	if r == nil {
		return
	}
	e = r.fill(ctx, e)
	if e.ActorID == "" {
		return
	}
	wss, err := r.Store.WorkspacesOf(ctx, e.ActorID)
	if err != nil {
		r.logger().Warn("security log: account event not recorded", "kind", e.Kind, "err", err)
		return
	}
	lines := make([]store.LogEvent, 0, len(wss))
	for _, w := range wss {
		l := e
		l.WorkspaceID = w.ID
		lines = append(lines, l)
	}
	r.append(ctx, lines)
}

func (r *Recorder) fill(ctx context.Context, e store.LogEvent) store.LogEvent {
	if e.At.IsZero() {
		now := time.Now
		if r.Now != nil {
			now = r.Now
		}
		e.At = now()
	}
	if e.ActorID == "" {
		e.ActorID = store.UserIDFrom(ctx)
	}
	if e.ActorEmail == "" && e.ActorID != "" {
		if u, err := r.Store.UserByID(ctx, e.ActorID); err == nil {
			e.ActorEmail = u.Email
		}
	}
	o := OriginFrom(ctx)
	if e.IP == "" {
		e.IP = o.IP
	}
	if e.UserAgent == "" {
		e.UserAgent = o.UserAgent
	}
	return e
}

func (r *Recorder) append(ctx context.Context, lines []store.LogEvent) {
	if len(lines) == 0 {
		return
	}
	// The log outlives the request: a client that hangs up does not unwrite it.
	ctx = context.WithoutCancel(ctx)
	lines, err := r.Store.AppendLog(ctx, lines...)
	if err != nil {
		r.logger().Warn("security log: event not recorded", "kind", lines0(lines), "err", err)
		return
	}
	if r.Appended != nil {
		if err := r.Appended(ctx, lines); err != nil {
			r.logger().Warn("security log: webhook deliveries not planned", "kind", lines0(lines), "err", err)
		}
	}
}

func lines0(lines []store.LogEvent) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[0].Kind
}

func (r *Recorder) logger() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// Origin is where a request comes from, as the service sees it: the peer address (SitePulse
// trusts no X-Forwarded-For) and the User-Agent.
type Origin struct {
	IP        string
	UserAgent string
}

type originKey struct{}

// WithOrigin returns a context carrying the request's origin; the HTTP middleware sets it on
// every request.
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// OriginFrom returns the request's origin; zero outside a request (the scheduler, a job).
func OriginFrom(ctx context.Context) Origin {
	o, _ := ctx.Value(originKey{}).(Origin)
	return o
}
