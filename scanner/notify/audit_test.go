package notify

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"sitepulse/scanner/platform"
	"sitepulse/securitylog"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// A security log line reaches the channels subscribed to audit events, and only them, as a
// webhook signed with the channel's secret (X-SitePulse-Signature, verified by Verify), through
// an `audit_delivery` job of its own; a tampered body does not verify. Chat channels cannot
// subscribe to the audit log.
func TestAuditWebhook(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			ctx := context.Background()
			st := be.Open(t)
			r := newAlertRig(t, st)
			keys := r.dl.Keys.(*platform.Keys)
			url, _ := keys.SealFor(platform.PurposeChannelURL, r.rc.URL+"/siem", r.user.ID)
			secret, _ := keys.SealFor(platform.PurposeChannelSecret, "whsec_siem", r.user.ID)
			siem := store.Channel{ID: store.NewID(), WorkspaceID: r.user.ID, Kind: KindWebhook, Name: "SIEM", URLSealed: url, SecretSealed: secret,
				Events: []string{store.EventAudit}, CreatedAt: now}
			if err := st.CreateChannel(ctx, r.user.ID, siem); err != nil {
				t.Fatal(err)
			}
			chat := store.Channel{ID: store.NewID(), WorkspaceID: r.user.ID, Kind: KindSlack, Name: "chat", URLSealed: url, Events: []string{store.EventAudit}, CreatedAt: now}
			if err := st.CreateChannel(ctx, r.user.ID, chat); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("a Slack channel subscribed to the audit log: %v, want refused", err)
			}

			rec := &securitylog.Recorder{Store: st, Now: func() time.Time { return r.at }, Appended: (&AuditPlanner{Store: st, Now: func() time.Time { return r.at }}).Plan}
			ctx = securitylog.WithOrigin(ctx, securitylog.Origin{IP: "198.51.100.7", UserAgent: "Firefox"})
			rec.Record(store.WithUserID(ctx, r.user.ID), store.LogEvent{WorkspaceID: r.user.ID, Kind: store.LogAPIKeyCreated, Target: "CI"})

			job, err := st.ClaimJob(ctx, KindAuditDelivery, "test", r.at, 0)
			if err != nil {
				t.Fatalf("no audit_delivery job: %v", err)
			}
			var d AuditDispatch
			if err := json.Unmarshal(job.Args, &d); err != nil {
				t.Fatal(err)
			}
			if err := r.dl.WorkAudit(ctx, job, d); err != nil {
				t.Fatal(err)
			}
			if _, err := st.ClaimJob(ctx, KindAuditDelivery, "test", r.at, 0); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a second audit job: %v, want one per line and subscribed channel", err)
			}
			if n := r.rc.count("/siem"); n != 1 {
				t.Fatalf("the SIEM got %d requests, want 1", n)
			}
			for _, path := range []string{"/slack", "/teams", "/discord", "/webhook"} {
				if n := r.rc.count(path); n != 0 {
					t.Errorf("%s, subscribed to alerts only, got %d requests", path, n)
				}
			}
			body, sig := r.rc.got["/siem"][0], r.rc.sigs["/siem"][0]
			if err := Verify([]byte("whsec_siem"), sig, body, r.at, 5*time.Minute); err != nil {
				t.Errorf("the signature does not verify: %v", err)
			}
			if err := Verify([]byte("whsec_siem"), sig, append([]byte(" "), body...), r.at, 5*time.Minute); err == nil {
				t.Error("a tampered body verifies")
			}
			if err := Verify([]byte("another secret"), sig, body, r.at, 5*time.Minute); err == nil {
				t.Error("another secret verifies")
			}
			var e AuditEvent
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatal(err)
			}
			if e.Type != store.EventAudit || e.Line.Kind != store.LogAPIKeyCreated || e.Line.Seq == 0 || e.Line.IP != "198.51.100.7" ||
				e.Line.ActorEmail != r.user.Email || e.ID != "audit-"+r.user.ID+"-"+itoa(e.Line.Seq) {
				t.Errorf("the audit event reads %+v", e)
			}
			ds, err := st.DeliveriesOf(ctx, r.user.ID, r.user.ID, siem.ID, 10)
			if err != nil || len(ds) != 1 || ds[0].State != store.DeliveryDelivered || ds[0].EventType != store.EventAudit {
				t.Errorf("the SIEM channel's deliveries: %+v, %v", ds, err)
			}
		})
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
