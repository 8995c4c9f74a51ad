package store

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// PasswordIterations is the PBKDF2-SHA256 work factor (OWASP 2023: 600,000).
const PasswordIterations = 600_000

// HashPassword derives the stored form of a password: "pbkdf2-sha256$<iterations>$<salt>$<key>",
// salt and key base64url, with a fresh 16-byte salt.
func HashPassword(password string, iterations int) (string, error) {
	salt := make([]byte, 16)
	rand.Read(salt)
	key, err := pbkdf2.Key(sha256.New, password, salt, iterations, 32)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	return fmt.Sprintf("pbkdf2-sha256$%d$%s$%s", iterations, enc.EncodeToString(salt), enc.EncodeToString(key)), nil
}

// CheckPassword compares a password with a stored hash in constant time. rehash is true when
// the hash was made with fewer iterations than want, so the caller can upgrade it.
func CheckPassword(stored, password string, want int) (ok, rehash bool) {
	parts := strings.Split(stored, "$")
	if len(parts) != 4 || parts[0] != "pbkdf2-sha256" {
		return false, false
	}
	iterations, err := strconv.Atoi(parts[1])
	if err != nil || iterations < 1 || iterations > 10_000_000 {
		return false, false
	}
	enc := base64.RawURLEncoding
	salt, err1 := enc.DecodeString(parts[2])
	key, err2 := enc.DecodeString(parts[3])
	if err1 != nil || err2 != nil || len(key) == 0 {
		return false, false
	}
	got, err := pbkdf2.Key(sha256.New, password, salt, iterations, len(key))
	if err != nil {
		return false, false
	}
	ok = subtle.ConstantTimeCompare(got, key) == 1
	return ok, ok && iterations < want
}
