package store

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// DisplayTextProblem says why s may not be shown to other people as a name or title (an OAuth
// client's client_name on the consent page, a report's title on its public page), or "" when
// it may. It refuses what can make one text read as another (issue 22, SECURITY §10): control
// characters and NUL, line and paragraph separators, every format character (category Cf, such
// as U+202E RIGHT-TO-LEFT OVERRIDE and the zero-width joiners), the Unicode
// Default_Ignorable_Code_Point set (the Hangul fillers U+115F, U+1160, U+3164, U+FFA0, the
// variation selectors, ...), the Braille blank U+2800, and bytes that are not UTF-8 (or the
// U+FFFD a JSON decoder put in their place). One rule
// for every door, so the register endpoint and the report tools cannot disagree.
func DisplayTextProblem(s string) string {
	for _, r := range s {
		if r == utf8.RuneError {
			// A byte that is not UTF-8, or the U+FFFD a decoder put in its place.
			return "must be valid UTF-8"
		}
		if why := invisible(r); why != "" {
			return fmt.Sprintf("must not contain %s (U+%04X)", why, r)
		}
	}
	return ""
}

// invisible names the kind of r when r is a character DisplayTextProblem refuses.
func invisible(r rune) string {
	switch {
	case r == 0:
		return "a NUL character"
	case unicode.IsControl(r):
		return "a control character"
	case unicode.In(r, unicode.Zl, unicode.Zp):
		return "a line or paragraph separator"
	case unicode.Is(unicode.Cf, r):
		return "an invisible formatting character"
	case r == '\u2800':
		return "a blank Braille pattern"
	case unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector):
		return "an invisible (default-ignorable) character"
	}
	return ""
}

// confusableScripts are the scripts with letters that pass for one another (Latin a, Cyrillic
// а, Greek α; Latin o, Armenian օ; Latin A, Cherokee Ꭺ). A name whose letters come from two of
// them is probably made to look like another name.
var confusableScripts = []*unicode.RangeTable{unicode.Latin, unicode.Cyrillic, unicode.Greek, unicode.Armenian, unicode.Cherokee, unicode.Coptic}

// MixedScripts answers whether s has letters from two scripts whose letters look alike, such
// as "Cl" + Cyrillic "а" + "ude". The consent page warns about such a name rather than refusing
// it: "Ωmega" is a real product name too.
func MixedScripts(s string) bool {
	seen := -1
	for _, r := range s {
		if !unicode.IsLetter(r) {
			continue
		}
		for i, t := range confusableScripts {
			if unicode.Is(t, r) {
				if seen >= 0 && seen != i {
					return true
				}
				seen = i
				break
			}
		}
	}
	return false
}
