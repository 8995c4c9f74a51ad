package store_test

import (
	"strings"
	"testing"

	"sitepulse/store"
)

func TestPasswords(t *testing.T) {
	h, err := store.HashPassword("correct horse", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "pbkdf2-sha256$1000$") {
		t.Errorf("hash %q has the wrong shape", h)
	}
	if h2, _ := store.HashPassword("correct horse", 1000); h2 == h {
		t.Error("two hashes of one password are equal: the salt is not random")
	}
	tests := []struct {
		name, stored, password string
		want, rehash           int
		ok, needRehash         bool
	}{
		{"the right password matches", h, "correct horse", 1000, 0, true, false},
		{"a wrong password does not", h, "correct horsf", 1000, 0, false, false},
		{"an empty password does not", h, "", 1000, 0, false, false},
		{"a weaker hash asks to be rehashed", h, "correct horse", 2000, 0, true, true},
		{"garbage never matches", "garbage", "x", 1000, 0, false, false},
		{"a huge iteration count is refused", "pbkdf2-sha256$999999999$AA$AA", "x", 1000, 0, false, false},
		{"a bad salt is refused", "pbkdf2-sha256$1000$!!$AA", "x", 1000, 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, rehash := store.CheckPassword(tt.stored, tt.password, tt.want)
			if ok != tt.ok || rehash != tt.needRehash {
				t.Errorf("CheckPassword = %v, %v; want %v, %v", ok, rehash, tt.ok, tt.needRehash)
			}
		})
	}
}

func TestSecrets(t *testing.T) {
	s, h := store.NewSecret("svc_")
	if !strings.HasPrefix(s, "svc_") || len(s) != 4+43 {
		t.Errorf("secret %q: want svc_ and 43 base64url characters (32 bytes)", s)
	}
	if store.HashSecret(s) != h || len(h) != 64 {
		t.Errorf("hash %q", h)
	}
	id := store.NewID()
	if !store.ValidUUID(id) || id[14] != '4' {
		t.Errorf("id %q is not a v4 uuid", id)
	}
	for _, bad := range []string{"", "x", strings.Repeat("a", 36), "123e4567-e89b-12d3-a456-42661417400g", "123e4567e89b-12d3-a456-4266141740000"} {
		if store.ValidUUID(bad) {
			t.Errorf("ValidUUID(%q) = true", bad)
		}
	}
	if !store.ValidUUID("123E4567-E89B-12D3-A456-426614174000") {
		t.Error("upper-case uuid refused")
	}
}

// NIST SP 800-63B: at least 8 characters that are not all blank, no composition rules, and not
// one of the most common passwords; the refusal says why.
func TestPasswordProblem(t *testing.T) {
	for _, tt := range []struct{ pw, want string }{
		{"correct horse battery", ""},
		{"Tr0ub4dor&3x", ""},
		{"seven77", "at least 8 characters"},
		{"        ", "not only spaces"},
		{"\t \u00a0\u3000 \n  ", "not only spaces"},
		{"12345678", "one of the 10,000 most common"},
		{"password", "one of the 10,000 most common"},
		{"PassWord1", "one of the 10,000 most common"},
		{"roberto1", "one of the 10,000 most common"}, // the list's 9,998th
		{"bluenote", ""},                              // past the first 10,000
		{"iloveyou", "one of the 10,000 most common"},
		{strings.Repeat("x", 1025), "at most 1024"},
	} {
		got := store.PasswordProblem(tt.pw)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("PasswordProblem(%q) = %q, want it to say %q", tt.pw, got, tt.want)
		}
	}
}
