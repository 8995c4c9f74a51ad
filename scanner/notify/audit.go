package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"sitepulse/securitylog"
	"sitepulse/store"
)

// KindAuditDelivery is the job kind that sends one security log line to one channel subscribed
// to store.EventAudit: a SIEM's signed webhook (docs/audit-log.md).
const KindAuditDelivery = "audit_delivery"

// AuditEvent is the signed JSON body of an audit delivery. ID is the X-SitePulse-Delivery id a
// receiver drops a duplicate by: the line's workspace and sequence, the same on every retry.
type AuditEvent struct {
	ID        string           `json:"id"`
	Type      string           `json:"type"` // always "audit"
	CreatedAt time.Time        `json:"createdAt"`
	Workspace EventRef         `json:"workspace"`
	Line      securitylog.Line `json:"line"`
}

// AuditDispatch is one line bound for one channel: the args of an `audit_delivery` job.
type AuditDispatch struct {
	WorkspaceID string     `json:"workspaceId"`
	ChannelID   string     `json:"channelId"`
	Event       AuditEvent `json:"event"`
}

// Kind makes an AuditDispatch the args of an `audit_delivery` job.
func (AuditDispatch) Kind() string { return KindAuditDelivery }

// MaxAttempts is Dispatch's: Next's 24-hour window gives a delivery up.
func (AuditDispatch) MaxAttempts() int { return 10000 }

// AuditEventOf is a line's audit event.
func AuditEventOf(e store.LogEvent) AuditEvent {
	return AuditEvent{ID: "audit-" + e.WorkspaceID + "-" + strconv.FormatInt(e.Seq, 10), Type: store.EventAudit, CreatedAt: e.At,
		Workspace: EventRef{ID: e.WorkspaceID}, Line: securitylog.LineOf(e)}
}

// RenderAudit is an audit event's request: its JSON, and the headers of the signed webhook,
// signed with secret at now as every webhook event is (Sign, Verify).
func RenderAudit(e AuditEvent, secret []byte, now time.Time) ([]byte, http.Header, error) {
	body, err := json.Marshal(e)
	if err != nil {
		return nil, nil, err
	}
	h := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"SitePulse-Alerts/1"}}
	h.Set("X-SitePulse-Event", e.Type)
	h.Set("X-SitePulse-Delivery", e.ID)
	h.Set("X-SitePulse-Signature", Sign(secret, now, body))
	return body, h, nil
}

// AuditStore is what planning audit deliveries reads and writes.
type AuditStore interface {
	WorkspaceChannels(ctx context.Context, workspaceID string) ([]store.Channel, error)
	PlanDeliveries(ctx context.Context, workspaceID string, ds []store.Delivery, jobs []store.JobArgs, now time.Time) (int, error)
}

// AuditPlanner plans the deliveries of security log lines just appended: one pending delivery
// row and one `audit_delivery` job per line and channel of its workspace subscribed to audit
// events, stored together (securitylog.Recorder.Appended).
type AuditPlanner struct {
	Store AuditStore
	Now   func() time.Time
}

// Plan plans the deliveries of lines as AppendLog answered them (with their Seq).
func (p *AuditPlanner) Plan(ctx context.Context, lines []store.LogEvent) error {
	byWS := map[string][]store.LogEvent{}
	for _, l := range lines {
		byWS[l.WorkspaceID] = append(byWS[l.WorkspaceID], l)
	}
	now := p.Now()
	for ws, ls := range byWS {
		chs, err := p.Store.WorkspaceChannels(ctx, ws)
		if err != nil {
			return err
		}
		var recs []store.Delivery
		var jobs []store.JobArgs
		for _, c := range chs {
			if c.Kind != store.ChannelWebhook || !slices.Contains(c.Events, store.EventAudit) {
				continue
			}
			for _, l := range ls {
				e := AuditEventOf(l)
				recs = append(recs, store.Delivery{ID: store.NewID(), ChannelID: c.ID, EventID: e.ID, EventType: e.Type, State: store.DeliveryPending, CreatedAt: now})
				jobs = append(jobs, AuditDispatch{WorkspaceID: ws, ChannelID: c.ID, Event: e})
			}
		}
		if len(recs) == 0 {
			continue
		}
		if _, err := p.Store.PlanDeliveries(ctx, ws, recs, jobs, now); err != nil {
			return err
		}
	}
	return nil
}

// WorkAudit is the `audit_delivery` job's worker: one attempt, retried and recorded as an alert
// delivery is (Deliverer.Work).
func (dl *Deliverer) WorkAudit(ctx context.Context, job store.Job, d AuditDispatch) error {
	next, err := dl.attempt(ctx, d.WorkspaceID, d.ChannelID, d.Event.ID, d.Event.Type, max(job.Attempt-job.Snoozes(), 1), job.CreatedAt,
		func(c store.Channel, now time.Time) (Attempt, bool) {
			url, secret, a, opened := dl.open(d.WorkspaceID, c)
			if !opened {
				return a, false
			}
			body, h, err := RenderAudit(d.Event, secret, now)
			if err != nil {
				return Attempt{Err: err.Error()}, false
			}
			return post(ctx, dl.Client, url, body, h, now), true
		})
	if err != nil {
		return err
	}
	if next != nil {
		return &retryAt{at: *next, reason: "audit delivery " + d.Event.ID + " pending: the receiver was not reached or asked to wait"}
	}
	return nil
}
