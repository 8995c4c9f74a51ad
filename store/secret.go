package store

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// NewSecret returns a fresh credential, prefix followed by 32 random bytes in base64url, and the
// hash that is stored in its place.
func NewSecret(prefix string) (secret, hash string) {
	b := make([]byte, 32)
	rand.Read(b) // never returns an error (crypto/rand, Go 1.24+)
	secret = prefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, HashSecret(secret)
}

// HashSecret is the stored form of a credential: hex SHA-256. Lookups go by this hash, so a
// timing difference in the database's index search reveals nothing about the secret.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	var out [2 * sha256.Size]byte // encoded here, so that the string is the one allocation
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// NewID returns a random (version 4) UUID.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ValidUUID answers whether s is a UUID in its canonical 8-4-4-4-12 hex form.
func ValidUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// CanonicalID returns a uuid as the stores keep it: lower case. Callers validate with ValidUUID.
func CanonicalID(s string) string { return strings.ToLower(s) }

// Now is the store's notion of a timestamp: UTC at microsecond precision, which is what
// Postgres keeps, so both stores return equal times.
func Now(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
