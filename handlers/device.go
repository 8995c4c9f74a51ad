package handlers

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"sitepulse/store"
)

// deviceTTL is how long a device cookie vouches for a browser; every login renews it.
const deviceTTL = 365 * 24 * time.Hour

// A device cookie marks a browser that has signed in to an account before (OWASP "Slow down
// online guessing attacks with device cookies"): the per-account cap on failed logins does not
// count such a browser's attempts, so guessing from elsewhere cannot lock the owner out. It is
// "v2.<user id>.<nonce>.<expiry>.<HMAC-SHA256>", signed with a key derived from AUTH_KEY and
// bound to the account and to its password: a password reset or change ends every device
// cookie of the account (the browser that changed it gets a new one). The nonce names the
// device for its own, smaller limit (deviceLimit).
func (s *server) deviceName() string {
	if s.secure {
		return "__Host-device"
	}
	return "device"
}

// deviceMAC signs a device cookie's fields for an account with the password hash pwHash.
func (s *server) deviceMAC(userID, pwHash, nonce, expiry string) string {
	m := hmac.New(sha256.New, s.deviceKey)
	m.Write([]byte("v2\x00" + userID + "\x00" + pwHash + "\x00" + nonce + "\x00" + expiry))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// setDevice gives the browser a fresh device cookie for u.
func (s *server) setDevice(w http.ResponseWriter, u store.User) {
	b := make([]byte, 16)
	rand.Read(b)
	nonce := base64.RawURLEncoding.EncodeToString(b)
	expiry := strconv.FormatInt(s.Now().Add(deviceTTL).Unix(), 10)
	http.SetCookie(w, &http.Cookie{
		Name: s.deviceName(), Value: "v2." + u.ID + "." + nonce + "." + expiry + "." + s.deviceMAC(u.ID, u.PasswordHash, nonce, expiry),
		Path: "/", MaxAge: int(deviceTTL.Seconds()), HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode,
	})
}

// forgetDevice clears the browser's device cookie (an account deleted, a password reset).
func (s *server) forgetDevice(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: s.deviceName(), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
}

// device returns the nonce of the request's device cookie when it is signed by this service,
// unexpired and bound to u and u's current password; "" otherwise. The signature is compared
// in constant time.
func (s *server) device(r *http.Request, u store.User) string {
	c, err := r.Cookie(s.deviceName())
	if err != nil || u.ID == "" {
		return ""
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 5 || parts[0] != "v2" {
		return ""
	}
	uid, nonce, expiry, mac := parts[1], parts[2], parts[3], parts[4]
	if !hmac.Equal([]byte(mac), []byte(s.deviceMAC(uid, u.PasswordHash, nonce, expiry))) || uid != u.ID {
		return ""
	}
	if exp, err := strconv.ParseInt(expiry, 10, 64); err != nil || !s.Now().Before(time.Unix(exp, 0)) {
		return ""
	}
	return nonce
}

// throttleKey names a count of the store's attempt counter (TakeLoginAttempt) for one purpose:
// a hash, so that no e-mail or id is stored in it.
func throttleKey(purpose, value string) string {
	sum := sha256.Sum256([]byte(purpose + "\x00" + value))
	return hex.EncodeToString(sum[:])
}

// accountKey names an account for the store's login count: the e-mail as typed, in its
// canonical form (store.CanonicalEmail), so that an e-mail with no account is counted alike,
// and "ſam@" (no account) is not counted as "sam@".
func accountKey(email string) string { return throttleKey("login", store.CanonicalEmail(email)) }

// deriveKey derives a key for one purpose from AUTH_KEY, so that one secret serves several
// signatures that cannot be swapped for each other.
func deriveKey(authKey []byte, purpose string) []byte {
	m := hmac.New(sha256.New, authKey)
	m.Write([]byte("sitepulse " + purpose))
	return m.Sum(nil)
}
