package handlers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"time"

	"sitepulse/oauth"
	"sitepulse/store"
)

// webhookReplayWindow is how long a delivery seen before, by its signed body or by its `_id`,
// is acknowledged and ignored : the signature has no timestamp, so this is the
// replay guard. The store keeps it, so it holds across replicas.
const webhookReplayWindow = 24 * time.Hour

// maxWebhookJitter delays each webhook scan by up to this much (interface "Limits").
const maxWebhookJitter = 5 * time.Second

// randomJitter is the default Deps.WebhookJitter: uniform in [0, 5 s].
func randomJitter() time.Duration {
	return time.Duration(rand.Int64N(int64(maxWebhookJitter) + 1))
}

// handlePlatformWebhook is the inbound site_publish event (interface "Events"):
// the raw body, read once under the 1 MiB cap, is verified before it is parsed; then the site
// is looked up by its platform id and a scan of both strategies is enqueued with trigger
// webhook, delayed by a 0-5 s jitter. Once the signature is valid the answer is always 200
// {ok: true}, also when the site is unknown, a scan is already in flight (SCAN_ALREADY_ACTIVE,
// logged) or the same body was seen within the replay window.
func (s *server) handlePlatformWebhook() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.PlatformSecret == "" {
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
		if !validSignature(s.PlatformSecret, body, r.Header.Get("x-platform-signature")) {
			writeError(w, http.StatusUnauthorized, "Invalid signature")
			return
		}
		var event map[string]json.RawMessage
		if err := json.Unmarshal(body, &event); err != nil || event == nil {
			writeError(w, http.StatusBadRequest, "request body must be a JSON object")
			return
		}
		var platformID string
		json.Unmarshal(event["siteId"], &platformID) // absent or not a string: no site has it
		ok := map[string]bool{"ok": true}
		now := s.Now()
		// Keys are recorded in order and the first seen one stops: of concurrent copies of a
		// delivery, exactly one records every key new and has an effect.
		seen := false
		for _, key := range deliveryKeys(body, event["_id"]) {
			var err error
			if seen, err = s.Store.SeenDelivery(r.Context(), key, now.Add(-webhookReplayWindow), now); err != nil {
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
		site, err := s.Store.SiteByPlatformID(r.Context(), platformID)
		if errors.Is(err, store.ErrNotFound) {
			s.Log.Info("webhook: publish for an unknown site ignored", "platform_site_id", platformID)
			oauth.WriteJSON(w, http.StatusOK, ok)
			return
		}
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		if err := s.Store.MarkPublished(r.Context(), site.ID, now); err != nil {
			s.error(w, r, err, "")
			return
		}
		scan := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerWebhook, CreatedAt: now}
		runAt := now.Add(s.WebhookJitter())
		err = s.Store.EnqueueScan(r.Context(), scan, store.QueueScan, runAt)
		switch {
		case errors.Is(err, store.ErrScanActive):
			s.Log.Warn("webhook: SCAN_ALREADY_ACTIVE: the site already has a queued or running scan", "site", site.ID)
		case err != nil:
			s.error(w, r, err, "")
			return
		default:
			s.Log.Info("webhook: publish; scan enqueued", "site", site.ID, "scan", scan.ID, "run_at", runAt.UTC().Format(time.RFC3339Nano))
		}
		oauth.WriteJSON(w, http.StatusOK, ok)
	})
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

// validSignature checks x-platform-signature: the lower-case hex HMAC-SHA256 of the raw body
// under the platform client secret, compared in constant time.
func validSignature(secret string, body []byte, header string) bool {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	want := hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(want), []byte(header))
}
