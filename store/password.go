package store

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
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

// commonPasswordList is the 10,000 most common passwords, one a line, most common first: the
// first 10,000 entries of the "passwords" frequency list of zxcvbn 4.4.2 (npm; MIT, see
// common_passwords.LICENSE), lower-case.
//
//go:embed common_passwords.txt
var commonPasswordList string

// commonPasswords is commonPasswordList as a set, built on first use.
var commonPasswords = sync.OnceValue(func() map[string]struct{} {
	set := make(map[string]struct{}, 10000)
	for _, p := range strings.Split(strings.TrimSpace(commonPasswordList), "\n") {
		set[p] = struct{}{}
	}
	return set
})

// MaxPassword bounds a password, in bytes, so that hashing one stays cheap.
const MaxPassword = 1024

// PasswordProblem says why a new password is refused, or "" when it is fine. It follows NIST
// SP 800-63B: at least 8 characters, not all blank, not one of the 10,000 most common passwords
// (compared case-insensitively), and no composition rules; at most 1024 bytes, so hashing it
// stays cheap.
func PasswordProblem(password string) string {
	switch {
	case utf8.RuneCountInString(password) < 8:
		return "Use at least 8 characters."
	case len(password) > MaxPassword:
		return "Use at most 1024 characters."
	case strings.TrimSpace(password) == "":
		return "Use a password that is not only spaces."
	}
	if _, common := commonPasswords()[strings.ToLower(password)]; common {
		return "This is one of the 10,000 most common passwords, which attackers try first. Choose another; a few unrelated words make a strong one."
	}
	return ""
}
