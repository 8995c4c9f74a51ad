package handlers

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"sitepulse/oauth"
	"sitepulse/scanner/platform"
	"sitepulse/store"
)

// WebhookStore is what the publish webhook needs: the site a platform id names, the replay
// guard of deliveries (which also makes a one-time notice single use, notice.go), the publish
// record and the scan it enqueues.
type WebhookStore interface {
	SiteByPlatformID(ctx context.Context, platformSiteID string) (store.Site, error)
	SeenDelivery(ctx context.Context, bodyHash string, since, now time.Time) (bool, error)
	ForgetDelivery(ctx context.Context, keys ...string) error
	RecordPublish(ctx context.Context, p store.Publish) error
	MarkPublished(ctx context.Context, siteID string, at time.Time) error
	EnqueueScan(ctx context.Context, s store.Scan, kind string, runAt time.Time) error
	EnqueueFollowUp(ctx context.Context, siteID string, runAt time.Time) (store.FollowUp, error)
}

// webhookReplayWindow is how long a delivery seen before, by its signed body or by its `_id`,
// is acknowledged and ignored: x-platform-signature has no timestamp, and Webflow retries a
// delivery with the same body, so this is the replay guard of both. The store keeps it, so it
// holds across replicas.
const webhookReplayWindow = 24 * time.Hour

// webflowTimestampWindow is how far x-webflow-timestamp may be from now, either way, before
// Webflow's delivery is refused as a replay (Webflow's docs: 5 minutes).
const webflowTimestampWindow = 5 * time.Minute

// maxWebhookJitter delays each webhook scan by up to this much (interface "Limits").
const maxWebhookJitter = 5 * time.Second

// randomJitter is the default Deps.WebhookJitter: uniform in [0, 5 s].
func randomJitter() time.Duration {
	return time.Duration(rand.Int64N(int64(maxWebhookJitter) + 1))
}

// handlePlatformWebhook is the inbound site_publish event (interface "Events"), in either of two
// shapes: the interface's (top-level siteId, x-platform-signature) or Webflow's own Data API v2
// delivery (payload.siteId, x-webflow-timestamp and x-webflow-signature), told apart by the
// x-webflow-signature header. The raw body, read once under the 1 MiB cap, is verified before it
// is parsed; then the site is looked up by its platform id and a scan of both strategies is enqueued with trigger
// webhook, delayed by a 0-5 s jitter. Once the signature is valid the answer is always 200
// {ok: true}, also when the site is unknown or the same body was seen within the replay window.
// A publish while the site has a scan in flight (SCAN_ALREADY_ACTIVE) is never dropped: a scan
// still queued audits it; otherwise the site's one follow-up scan does, once the running scan
// ends (store.EnqueueFollowUp: later publishes join it); the answer says which in followUp
// ("covered", "queued", "joined"), and the log too.
func (s *server) handlePlatformWebhook() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.PlatformSecret == "" && s.DemoWebhookSecret == "" {
			// Refuse rather than accept unsigned posts.
			writeError(w, http.StatusServiceUnavailable, "webhook not configured: PLATFORM_CLIENT_SECRET is not set")
			return
		}
		body, err := readRequestBody(r)
		if err != nil {
			if errors.Is(err, errTooLarge) {
				writeError(w, http.StatusRequestEntityTooLarge, errTooLarge.Error())
				return
			}
			writeError(w, http.StatusBadRequest, "could not read the request body")
			return
		}
		now := s.Now()
		webflow := len(r.Header.Values("x-webflow-signature")) > 0
		signedBy := func(secret string) bool {
			if secret == "" {
				return false
			}
			if webflow {
				return validWebflowSignature(secret, body, r.Header.Get("x-webflow-timestamp"), r.Header.Get("x-webflow-signature"), now)
			}
			return validSignature(secret, body, r.Header.Get("x-platform-signature"))
		}
		demoOnly := false
		if !signedBy(s.PlatformSecret) {
			if demoOnly = signedBy(s.DemoWebhookSecret); !demoOnly {
				writeError(w, http.StatusUnauthorized, "Invalid signature")
				return
			}
		}
		var event map[string]json.RawMessage
		if err := json.Unmarshal(body, &event); err != nil || event == nil {
			writeError(w, http.StatusBadRequest, "request body must be a JSON object")
			return
		}
		platformID := publishedSiteID(event, webflow)
		if demoOnly && s.PlatformSecret != "" && platformID != s.DemoPlatformID {
			writeError(w, http.StatusUnauthorized, "Invalid signature")
			return
		}
		ok := map[string]bool{"ok": true}
		// Keys are recorded in order and the first seen one stops: of concurrent copies of a
		// delivery, exactly one records every key new and has an effect.
		seen := false
		keys := deliveryKeys(body, event["_id"])
		for _, key := range keys {
			var err error
			if seen, err = s.Webhooks.SeenDelivery(r.Context(), key, now.Add(-webhookReplayWindow), now); err != nil {
				s.error(w, r, err, "")
				return
			}
			if seen {
				break
			}
		}
		if seen {
			s.Log.Info("webhook: delivery seen within 24 hours ignored", "platform_site_id", platformID)
			oauth.WriteJSON(w, http.StatusOK, ok)
			return
		}
		if platformID == "" {
			s.Log.Info("webhook: publish without a siteId ignored")
			oauth.WriteJSON(w, http.StatusOK, ok)
			return
		}
		site, err := s.Webhooks.SiteByPlatformID(r.Context(), platformID)
		if errors.Is(err, store.ErrNotFound) {
			s.Log.Info("webhook: publish for an unknown site ignored", "platform_site_id", platformID)
			oauth.WriteJSON(w, http.StatusOK, ok)
			return
		}
		if err != nil {
			s.failDelivery(w, r, keys, err)
			return
		}
		if err := s.Webhooks.MarkPublished(r.Context(), site.ID, now); err != nil {
			s.failDelivery(w, r, keys, err)
			return
		}
		scan := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerWebhook, CreatedAt: now}
		runAt := now.Add(s.WebhookJitter())
		err = s.Webhooks.EnqueueScan(r.Context(), scan, store.KindScan, runAt)
		pub := publishOf(event, webflow, now)
		pub.ID, pub.SiteID = store.NewID(), site.ID
		answer := map[string]any{"ok": true}
		switch {
		case errors.Is(err, store.ErrScanActive):
			did, err := s.Webhooks.EnqueueFollowUp(r.Context(), site.ID, runAt)
			if err != nil {
				s.failDelivery(w, r, keys, err)
				return
			}
			answer["followUp"] = did
			s.Log.Info("webhook: SCAN_ALREADY_ACTIVE: "+followUpSays[did], "site", site.ID, "follow_up", did)
		case err != nil:
			s.failDelivery(w, r, keys, err)
			return
		default:
			pub.ScanID = scan.ID
			s.Log.Info("webhook: publish; scan enqueued", "site", site.ID, "scan", scan.ID, "run_at", runAt.UTC().Format(time.RFC3339Nano))
		}
		// Who published is a detail of the publish, not its effect: the scan is enqueued, so a
		// failure here is logged and the delivery still acknowledged (a retry would not scan).
		if err := s.Webhooks.RecordPublish(r.Context(), pub); err != nil {
			s.Log.Warn("webhook: could not record who published", "site", site.ID, "err", err)
		}
		oauth.WriteJSON(w, http.StatusOK, answer)
	})
}

// followUpSays is what the log says of a publish during a scan, by what EnqueueFollowUp did.
var followUpSays = map[store.FollowUp]string{
	store.FollowUpCovered: "the queued scan has not started and will audit this publish",
	store.FollowUpQueued:  "a follow-up scan is queued to audit this publish once the running scan ends",
	store.FollowUpJoined:  "the follow-up scan already queued will audit this publish too",
}

// failDelivery answers a delivery whose effect failed after its keys were recorded, and forgets
// them, so the platform's retry of the delivery is not taken for a replay and the publish is not
// lost. The forgetting has a context of its own: the request's may be what failed.
func (s *server) failDelivery(w http.ResponseWriter, r *http.Request, keys []string, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	if ferr := s.Webhooks.ForgetDelivery(ctx, keys...); ferr != nil {
		s.Log.Warn("webhook: could not forget a failed delivery; its retry will be ignored", "err", ferr)
	}
	s.error(w, r, err, "")
}

// deliveryKeys are the replay guard's keys of a delivery: the hash of its signed body and, when
// it has one, of its event `_id`, so a re-serialized or re-signed copy of an event is caught too.
func deliveryKeys(body []byte, rawID json.RawMessage) []string {
	sum := sha256.Sum256(body)
	keys := []string{hex.EncodeToString(sum[:])}
	var id string
	if json.Unmarshal(rawID, &id) == nil && id != "" {
		sum := sha256.Sum256([]byte(id))
		keys = append(keys, "id:"+hex.EncodeToString(sum[:]))
	}
	return keys
}

// publishedSiteID is the platform site id a verified event names, "" when it names none (absent,
// not a string): the interface's top-level siteId, or in Webflow's shape payload.siteId of a
// site_publish trigger (Webflow signs its other triggers the same way; none of them is a publish).
func publishedSiteID(event map[string]json.RawMessage, webflow bool) string {
	var id string
	if !webflow {
		json.Unmarshal(event["siteId"], &id)
		return id
	}
	var trigger string
	var payload map[string]json.RawMessage
	json.Unmarshal(event["triggerType"], &trigger)
	json.Unmarshal(event["payload"], &payload)
	if trigger == platform.TriggerSitePublish {
		json.Unmarshal(payload["siteId"], &id)
	}
	return id
}

// publishOf reads what a verified site_publish says about the publish, from the top level in the
// interface's shape or from payload in Webflow's: publishedBy (a string, or an object's
// displayName, name or id, in that order), publishedOn (RFC 3339; now when absent or unreadable),
// domains (the strings among them) and the event's _id. Fields of another type are ignored: the
// publish is a fact whatever the details say.
func publishOf(event map[string]json.RawMessage, webflow bool, now time.Time) store.Publish {
	fields := event
	if webflow {
		fields = nil
		json.Unmarshal(event["payload"], &fields)
	}
	p := store.Publish{PublishedOn: now}
	json.Unmarshal(event["_id"], &p.PlatformEventID)
	if json.Unmarshal(fields["publishedBy"], &p.PublishedBy) != nil {
		var by struct{ DisplayName, Name, ID string }
		json.Unmarshal(fields["publishedBy"], &by)
		p.PublishedBy = cmp.Or(by.DisplayName, by.Name, by.ID)
	}
	var on string
	if json.Unmarshal(fields["publishedOn"], &on) == nil {
		if t, err := time.Parse(time.RFC3339Nano, on); err == nil {
			p.PublishedOn = t
		}
	}
	var domains []any
	json.Unmarshal(fields["domains"], &domains)
	for _, d := range domains {
		if d, ok := d.(string); ok {
			p.Domains = append(p.Domains, d)
		}
	}
	return p
}

// validSignature checks x-platform-signature: the lower-case hex HMAC-SHA256 of the raw body
// under the platform client secret, compared in constant time.
func validSignature(secret string, body []byte, header string) bool {
	return hmac.Equal([]byte(hmacHex(secret, body)), []byte(header))
}

// validWebflowSignature checks Webflow's delivery: x-webflow-timestamp (milliseconds since the
// epoch) within webflowTimestampWindow of now, and x-webflow-signature the lower-case hex
// HMAC-SHA256 of timestamp + ":" + raw body under the app's client secret, compared in constant time.
func validWebflowSignature(secret string, body []byte, timestamp, header string, now time.Time) bool {
	ms, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.UnixMilli(ms)); d > webflowTimestampWindow || d < -webflowTimestampWindow {
		return false
	}
	return hmac.Equal([]byte(hmacHex(secret, []byte(timestamp+":"), body)), []byte(header))
}

// hmacHex is the lower-case hex HMAC-SHA256 of the parts, in order, under secret.
func hmacHex(secret string, parts ...[]byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	for _, p := range parts {
		mac.Write(p)
	}
	return hex.EncodeToString(mac.Sum(nil))
}
