package store

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestDisplayTextProblem(t *testing.T) {
	refused := map[string]string{
		"Claude followed by Hangul fillers": "Claude\u3164\u3164\u3164",
		"a Braille blank between letters":   "A\u2800B",
		"Hangul choseong filler":            "Cl\u115Faude",
		"Hangul jungseong filler":           "Cl\u1160aude",
		"halfwidth Hangul filler":           "Cl\uFFA0aude",
		"a right-to-left override":          "Invoice\u202Egnp.exe",
		"a zero-width space":                "Cla\u200Bude",
		"a zero-width joiner":               "Cla\u200Dude",
		"a soft hyphen":                     "Cla\u00ADude",
		"a combining grapheme joiner":       "Cla\u034Fude",
		"a variation selector":              "Claude\uFE0F",
		"a tag character":                   "Claude\U000E0041",
		"a NUL byte":                        "Report\x00",
		"a line feed":                       "Report\nTwo",
		"a C1 control":                      "Report\u0085",
		"a line separator":                  "Report\u2028",
		"a byte that is not UTF-8":          "Report\xff",
		"a word joiner":                     "Cla\u2060ude",
		"an interlinear annotation anchor":  "Cla\uFFF9ude",
		"a Mongolian vowel separator":       "Cla\u180Eude",
		"a byte order mark inside the name": "Cla\uFEFFude",
	}
	for name, s := range refused {
		t.Run("refuses "+name, func(t *testing.T) {
			if got := DisplayTextProblem(s); got == "" {
				t.Errorf("DisplayTextProblem(%q) = \"\", want a reason", s)
			}
		})
	}
	allowed := []string{"Claude", "Cursor – AI code editor", "Éléonore's app", "株式会社テスト", "Café 42 (beta)", "Ünïcödé", "a b", "Клод"}
	for _, s := range allowed {
		t.Run("allows "+s, func(t *testing.T) {
			if got := DisplayTextProblem(s); got != "" {
				t.Errorf("DisplayTextProblem(%q) = %q, want \"\"", s, got)
			}
		})
	}
}

func TestMixedScripts(t *testing.T) {
	for s, want := range map[string]bool{
		"Claude":             false,
		"Cl\u0430ude":        true, // Cyrillic а among Latin letters
		"Клод":               false,
		"Claude 3.5 (beta)":  false,
		"株式会社テスト":            false, // Han and Katakana are one writing system
		"Ωmega app":          true,
		"VS Code – Insiders": false,
		"Copilot for 日本":     false, // Han has no letters that pass for Latin ones
		"":                   false,
	} {
		if got := MixedScripts(s); got != want {
			t.Errorf("MixedScripts(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestScopes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"mcp:read", "mcp:read"},
		{"mcp:write mcp:read", "mcp:read mcp:write"},
		{"offline_access mcp:read", "mcp:read"},
		{"openid profile", ""},
		{"mcp:read mcp:read", "mcp:read"},
	} {
		if got := KnownScopes(c.in); got != c.want {
			t.Errorf("KnownScopes(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if !HasScope("mcp:read mcp:write", ScopeWrite) || HasScope("mcp:read", ScopeWrite) || HasScope("", ScopeRead) {
		t.Error("HasScope answers wrongly")
	}
}

// FuzzDisplayTextProblem: whatever the bytes, an accepted text is valid UTF-8 without a
// control, format or default-ignorable character, and a refusal says why.
func FuzzDisplayTextProblem(f *testing.F) {
	for _, s := range []string{"Claude", "Cl\u0430ude", "A\u2800B", "Invoice\u202Egnp.exe", "\x00", "\xff", "株式会社"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		why := DisplayTextProblem(s)
		if why != "" {
			return
		}
		if !utf8.ValidString(s) {
			t.Fatalf("accepted invalid UTF-8 %q", s)
		}
		for _, r := range s {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || r == '\u2800' {
				t.Fatalf("accepted %q with U+%04X", s, r)
			}
		}
		MixedScripts(s) // must not panic
	})
}
