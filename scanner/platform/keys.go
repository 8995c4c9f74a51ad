package platform

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Keys seal platform access tokens at rest with AES-256-GCM (PLATFORM_TOKEN_KEY). The first key
// seals; every key opens. A sealed token names its key by id (the first 8 hex digits of the
// key's SHA-256), so rotating is: put a new key first and keep the old one after it until every
// connection has been made again.
type Keys struct {
	keys []sealKey
}

type sealKey struct {
	id   string
	aead cipher.AEAD
}

// ParseKeys reads a comma-separated list of base64 32-byte keys (`openssl rand -base64 32`).
func ParseKeys(spec string) (*Keys, error) {
	k := &Keys{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(part)
		if err != nil {
			raw, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(part, "="))
		}
		if err != nil || len(raw) != 32 {
			return nil, fmt.Errorf("PLATFORM_TOKEN_KEY: key %d is not 32 bytes of base64 (make one with: openssl rand -base64 32)", len(k.keys)+1)
		}
		if err := k.add(raw); err != nil {
			return nil, err
		}
	}
	if len(k.keys) == 0 {
		return nil, errors.New("PLATFORM_TOKEN_KEY: no key")
	}
	return k, nil
}

// RandomKeys makes a one-key ring for this process only: tokens sealed with it are lost at exit.
func RandomKeys() *Keys {
	raw := make([]byte, 32)
	rand.Read(raw)
	k := &Keys{}
	k.add(raw)
	return k
}

func (k *Keys) add(raw []byte) error {
	block, err := aes.NewCipher(raw)
	if err != nil {
		return err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(raw)
	k.keys = append(k.keys, sealKey{id: hex.EncodeToString(sum[:4]), aead: aead})
	return nil
}

// aad binds a sealed value to its purpose and owner: a sealed value copied to another user's row,
// or from an alert channel's URL to the platform token, does not open.
func aad(purpose, owner string) []byte { return []byte("sitepulse " + purpose + "\x00" + owner) }

// Purposes of sealed values.
const (
	PurposePlatformToken = "platform token"
	PurposeChannelURL    = "alert channel url"
	PurposeChannelSecret = "alert channel secret"
	// PurposeSiteAccess seals a site's access setting (store.Access), bound to the site's id.
	PurposeSiteAccess = "site access"
	// PurposeReportLink seals a client report's token, bound to the report's id.
	PurposeReportLink = "report link"
)

// SealReportLink seals the token of report reportID, so the Reports list can show its link
// again. A nil ring (Postgres without PLATFORM_TOKEN_KEY) seals nothing: "" and no error, and
// the report is kept hashed only.
func (k *Keys) SealReportLink(token, reportID string) (string, error) {
	if k == nil {
		return "", nil
	}
	return k.SealFor(PurposeReportLink, token, reportID)
}

// OpenReportLink opens what SealReportLink sealed for reportID.
func (k *Keys) OpenReportLink(sealed, reportID string) (string, error) {
	if k == nil || sealed == "" {
		return "", errSealed
	}
	return k.OpenFor(PurposeReportLink, sealed, reportID)
}

// Seal encrypts a token of userID under the first key: "<key id>.<base64url(nonce|ciphertext)>".
func (k *Keys) Seal(token, userID string) (string, error) {
	return k.SealFor(PurposePlatformToken, token, userID)
}

// Open decrypts a token Seal made for userID with any of the keys.
func (k *Keys) Open(sealed, userID string) (string, error) {
	return k.OpenFor(PurposePlatformToken, sealed, userID)
}

// SealFor encrypts a value of owner for one purpose under the first key.
func (k *Keys) SealFor(purpose, value, owner string) (string, error) {
	token, userID := value, owner
	key := k.keys[0]
	nonce := make([]byte, key.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	ct := key.aead.Seal(nonce, nonce, []byte(token), aad(purpose, userID))
	return key.id + "." + base64.RawURLEncoding.EncodeToString(ct), nil
}

// errSealed hides why a sealed token did not open: unknown key, tampering or another owner.
var errSealed = errors.New("the sealed platform token does not open with PLATFORM_TOKEN_KEY")

// OpenFor decrypts a value SealFor sealed for the same purpose and owner, with any of the keys.
func (k *Keys) OpenFor(purpose, sealed, userID string) (string, error) {
	id, body, ok := strings.Cut(sealed, ".")
	if !ok {
		return "", errSealed
	}
	ct, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return "", errSealed
	}
	for _, key := range k.keys {
		if key.id != id || len(ct) < key.aead.NonceSize() {
			continue
		}
		n := key.aead.NonceSize()
		plain, err := key.aead.Open(nil, ct[:n], ct[n:], aad(purpose, userID))
		if err != nil {
			return "", errSealed
		}
		return string(plain), nil
	}
	return "", errSealed
}
