package handlers

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// A notice is what a form shows once after its POST-redirect-GET: a sentence and, for a new
// API key, signing secret, invitation link or report link, the secret with a copy button. The
// redirect names it by a random id (?notice=), never by its text; the notice itself travels in
// a short-lived cookie sealed with a key derived from AUTH_KEY and bound to the session, which
// the page it was meant for reads and clears. The cookie goes to that page only (its Path), and
// the store's replay guard records the notice's id when it is shown, so a copy of the cookie
// replayed in the same session shows nothing either. So a reload shows it no more and makes
// nothing again, the secret is never in a URL nor in the database, and any replica sharing
// AUTH_KEY can show it.
type notice struct {
	ID      string `json:"i"`
	Text    string `json:"t"`           // the sentence, in bold
	Detail  string `json:"d,omitempty"` // what to do with the secret
	Secret  string `json:"s,omitempty"` // shown in a read-only field with a copy button
	Label   string `json:"l,omitempty"` // the field's name for screen readers
	Link    string `json:"k,omitempty"` // a page (or a section of this one) that says more
	LinkTo  string `json:"n,omitempty"` // the link's words
	Expires int64  `json:"x"`           // Unix seconds
}

// noticeTTL is how long a notice waits for its page: the redirect follows at once.
const noticeTTL = 5 * time.Minute

func (s *server) noticeCookie() string {
	if s.secure {
		return "__Secure-notice" // not __Host-: its Path is one page, not /
	}
	return "notice"
}

func (s *server) noticeAEAD() cipher.AEAD {
	block, _ := aes.NewCipher(deriveKey(s.AuthKey, "one-time notice")) // 32 bytes: AES-256
	aead, _ := cipher.NewGCM(block)
	return aead
}

// noticeOwner binds a notice to the visitor's session, so it opens in no other.
func noticeOwner(r *http.Request) []byte {
	owner := "notice"
	if v := visitorFrom(r.Context()); v != nil {
		owner += "\x00" + v.Session.TokenHash
	}
	return []byte(owner)
}

// redirectNotice answers a form's POST with 303 to target (its fragment dropped), whose page
// shows n once.
func (s *server) redirectNotice(w http.ResponseWriter, r *http.Request, target string, n notice) {
	b := make([]byte, 12)
	rand.Read(b)
	n.ID, n.Expires = base64.RawURLEncoding.EncodeToString(b), s.Now().Add(noticeTTL).Unix()
	plain, _ := json.Marshal(n)
	aead := s.noticeAEAD()
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	// The notice shows at the top of the page: no fragment, which would scroll past it.
	path, _, _ := strings.Cut(target, "#")
	page, _, _ := strings.Cut(path, "?")
	http.SetCookie(w, &http.Cookie{Name: s.noticeCookie(), Value: base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, noticeOwner(r))),
		Path: page, MaxAge: int(noticeTTL.Seconds()), HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	http.Redirect(w, r, path+sep+"notice="+url.QueryEscape(n.ID), http.StatusSeeOther)
}

// takeNotice returns the notice the request's ?notice= names when this browser's cookie holds
// it, unexpired, of this session and not shown before, and clears the cookie: it is shown once.
func (s *server) takeNotice(w http.ResponseWriter, r *http.Request) *notice {
	id := r.URL.Query().Get("notice")
	if id == "" {
		return nil
	}
	c, err := r.Cookie(s.noticeCookie())
	if err != nil {
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: s.noticeCookie(), Value: "", Path: r.URL.Path, MaxAge: -1, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
	sealed, err := base64.RawURLEncoding.DecodeString(c.Value)
	aead := s.noticeAEAD()
	if err != nil || len(sealed) < aead.NonceSize() {
		return nil
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], noticeOwner(r))
	var n notice
	now := s.Now()
	if err != nil || json.Unmarshal(plain, &n) != nil || n.ID != id || !now.Before(time.Unix(n.Expires, 0)) {
		return nil
	}
	// Single use on the server: the first showing records the id for the notice's lifetime.
	if seen, err := s.Webhooks.SeenDelivery(r.Context(), "notice:"+n.ID, now.Add(-noticeTTL), now); err != nil || seen {
		return nil
	}
	return &n
}
