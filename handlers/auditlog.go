package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"sitepulse/securitylog"
	"sitepulse/store"
)

// SecurityLogStore is what the audit log page and its exports read (docs/audit-log.md).
// Recording goes through Deps.Recorder.
type SecurityLogStore interface {
	securitylog.Store
	LogOf(ctx context.Context, f store.LogFilter) ([]store.LogEvent, error)
}

// auditPageSize is how many lines one page of the audit log shows.
const auditPageSize = 50

// auditData is the audit log page.
type auditData struct {
	Workspace store.Workspace
	Lines     []securitylog.Line
	Kinds     []struct{ Kind, Means string }
	Groups    []string // "sso.", "auth.", ...: a filter for every kind of a group
	Filter    auditQuery
	// Next is the query of the next (older) page; empty on the last.
	Next string
	// First is set on a page after the first: its link goes back to the newest lines.
	First     string
	Export    string // the filter's query, for the export links
	Retention int    // days the log keeps a line
}

// auditQuery is the page's and the export's filter as the form sends it: kind, actor, from and
// to as dates (UTC; to included), and the keyset cursor ("at-unix-micro.seq").
type auditQuery struct {
	Kind, Actor, From, To, After string
}

// parseAuditQuery reads the filter; a value that is not what the form sends is an error
// naming it, answered 422.
func parseAuditQuery(q url.Values, workspaceID string) (store.LogFilter, auditQuery, error) {
	a := auditQuery{Kind: strings.TrimSpace(q.Get("kind")), Actor: strings.TrimSpace(q.Get("actor")),
		From: strings.TrimSpace(q.Get("from")), To: strings.TrimSpace(q.Get("to")), After: strings.TrimSpace(q.Get("after"))}
	f := store.LogFilter{WorkspaceID: workspaceID, Kind: a.Kind, Actor: a.Actor}
	if a.Kind != "" && !store.KnownLogKind(a.Kind) && !knownKindPrefix(a.Kind) {
		return f, a, fmt.Errorf("kind: choose a kind from the list")
	}
	if len(a.Actor) > 320 {
		return f, a, fmt.Errorf("actor: an e-mail or user id")
	}
	var err error
	if a.From != "" {
		if f.From, err = time.Parse(time.DateOnly, a.From); err != nil {
			return f, a, fmt.Errorf("from: a date as YYYY-MM-DD")
		}
	}
	if a.To != "" {
		to, err := time.Parse(time.DateOnly, a.To)
		if err != nil {
			return f, a, fmt.Errorf("to: a date as YYYY-MM-DD")
		}
		f.To = to.AddDate(0, 0, 1) // the whole day
	}
	if a.After != "" {
		micro, seq, ok := strings.Cut(a.After, ".")
		us, err1 := strconv.ParseInt(micro, 10, 64)
		n, err2 := strconv.ParseInt(seq, 10, 64)
		if !ok || err1 != nil || err2 != nil || n < 0 {
			return f, a, fmt.Errorf("after: not a page of this log")
		}
		f.After = &store.LogCursor{At: time.UnixMicro(us).UTC(), Seq: n}
	}
	return f, a, nil
}

// knownKindPrefix answers whether p is "group." of some kind: the filter's groups.
func knownKindPrefix(p string) bool {
	if !strings.HasSuffix(p, ".") {
		return false
	}
	for _, k := range store.LogKinds {
		if strings.HasPrefix(k.Kind, p) {
			return true
		}
	}
	return false
}

// kindGroups are the kinds' groups ("auth.", "sso.", ...) in LogKinds' order.
func kindGroups() []string {
	var out []string
	for _, k := range store.LogKinds {
		g, _, _ := strings.Cut(k.Kind, ".")
		if !slices.Contains(out, g+".") {
			out = append(out, g+".")
		}
	}
	return out
}

func (a auditQuery) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"kind": a.Kind, "actor": a.Actor, "from": a.From, "to": a.To} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// handleAuditLog is a workspace's audit log page (owners: ActAudit), newest first, filtered,
// a page at a time by keyset (the last line's time and sequence), so a page deep in a long log
// costs what the first does.
func (s *server) handleAuditLog() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws := workspaceFrom(r.Context())
		f, q, err := parseAuditQuery(r.URL.Query(), ws.ID)
		if err != nil {
			s.renderError(w, r, http.StatusUnprocessableEntity, "The audit log filter was not understood: "+err.Error()+".")
			return
		}
		f.Limit = auditPageSize + 1
		lines, err := s.SecurityLog.LogOf(r.Context(), f)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		base := "/workspaces/" + ws.ID + "/audit-log"
		d := auditData{Workspace: ws, Kinds: store.LogKinds, Groups: kindGroups(), Filter: q, Retention: s.LogRetentionDays}
		if len(lines) > auditPageSize {
			lines = lines[:auditPageSize]
			last := lines[len(lines)-1]
			v := q.values()
			v.Set("after", strconv.FormatInt(last.At.UnixMicro(), 10)+"."+strconv.FormatInt(last.Seq, 10))
			d.Next = base + "?" + v.Encode()
		}
		if q.After != "" {
			d.First = base + "?" + q.values().Encode()
		}
		for _, e := range lines {
			d.Lines = append(d.Lines, securitylog.LineOf(e))
		}
		d.Export = q.values().Encode()
		s.render(w, r, http.StatusOK, "audit_log", page{Title: "Audit log · " + ws.Name, Data: d})
	})
}

// handleAuditExport streams the filtered log as CSV or JSON Lines, a keyset page of the store at
// a time, so the whole log never sits in memory. The export is itself recorded. As the site
// export, an error after the first line aborts the response: a failed download, never a
// truncated file that looks whole.
func (s *server) handleAuditExport() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws := workspaceFrom(r.Context())
		format := r.URL.Query().Get("format")
		if format == "" {
			format = "csv"
		}
		ctype, ok := securitylog.Formats[format]
		if !ok {
			s.renderError(w, r, http.StatusUnprocessableEntity, "Export the audit log as csv or jsonl.")
			return
		}
		f, q, err := parseAuditQuery(r.URL.Query(), ws.ID)
		if err != nil || f.After != nil {
			if err == nil {
				err = fmt.Errorf("after: an export starts at the newest line")
			}
			s.renderError(w, r, http.StatusUnprocessableEntity, "The audit log filter was not understood: "+err.Error()+".")
			return
		}
		f.Limit = store.MaxLogPage
		first, err := s.SecurityLog.LogOf(r.Context(), f)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		details := q.values()
		s.audit(r.Context(), ws.ID, store.LogLogExported, "", map[string]string{"format": format, "filter": details.Encode()})
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(exportDeadline))
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Content-Disposition", `attachment; filename="audit-log-`+ws.ID+`.`+format+`"`)
		w.Header().Set("Cache-Control", "no-store")
		out, err := securitylog.NewWriter(w, format)
		for lines := first; err == nil && len(lines) > 0; {
			for _, e := range lines {
				if err = out.Write(e); err != nil {
					break
				}
			}
			if err != nil || len(lines) < f.Limit {
				break
			}
			if err = out.Flush(); err != nil {
				break
			}
			last := lines[len(lines)-1]
			f.After = &store.LogCursor{At: last.At, Seq: last.Seq}
			lines, err = s.SecurityLog.LogOf(r.Context(), f)
		}
		if err == nil {
			err = out.Flush()
		}
		if err != nil {
			s.Log.Warn("audit log export aborted", "workspace", ws.ID, "err", err)
			panic(http.ErrAbortHandler)
		}
	})
}
