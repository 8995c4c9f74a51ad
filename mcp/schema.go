package mcp

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"sitepulse/store"
)

// Schema is the JSON Schema subset the tools use. The same value is published by tools/list and
// enforced by validate, so what a client reads is what the server checks.
type Schema struct {
	Type                 string             `json:"type"`
	Description          string             `json:"description,omitempty"`
	Properties           map[string]*Schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	AdditionalProperties *bool              `json:"additionalProperties,omitempty"`
	Format               string             `json:"format,omitempty"` // "uuid" is enforced, as the budget check's 422 is
	Enum                 []string           `json:"enum,omitempty"`
	MinLength            *int               `json:"minLength,omitempty"`
	MaxLength            *int               `json:"maxLength,omitempty"`
	Minimum              *int               `json:"minimum,omitempty"`
	Maximum              *int               `json:"maximum,omitempty"`
	Default              any                `json:"default,omitempty"`
	// displayText marks a string others will see (a report's title): the domain's rule
	// against invisible and control characters applies (store.DisplayTextProblem).
	displayText bool
}

func intp(v int) *int { return &v }

var no = false

// validate checks decoded arguments against an object schema and returns the first problem in
// words a model can act on ("limit must be at most 50"), or "".
func validate(s *Schema, args map[string]any) string {
	for _, name := range s.Required {
		if _, ok := args[name]; !ok {
			return name + " is required"
		}
	}
	names := make([]string, 0, len(args))
	for name := range args {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p, ok := s.Properties[name]
		if !ok {
			if s.AdditionalProperties != nil && !*s.AdditionalProperties {
				if len(s.Properties) == 0 {
					return fmt.Sprintf("unknown argument %q: this tool takes no arguments", name)
				}
				return fmt.Sprintf("unknown argument %q (expected %s)", name, strings.Join(sortedKeys(s.Properties), ", "))
			}
			continue
		}
		if msg := validateValue(name, p, args[name]); msg != "" {
			return msg
		}
	}
	return ""
}

func sortedKeys(m map[string]*Schema) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func validateValue(name string, p *Schema, v any) string {
	switch p.Type {
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Sprintf("%s must be a string, got %s", name, jsonType(v))
		}
		n := utf8.RuneCountInString(str)
		if p.MinLength != nil && n < *p.MinLength {
			return fmt.Sprintf("%s must be at least %d characters", name, *p.MinLength)
		}
		if p.MaxLength != nil && n > *p.MaxLength {
			return fmt.Sprintf("%s must be at most %d characters, got %d", name, *p.MaxLength, n)
		}
		if p.displayText {
			if why := store.DisplayTextProblem(str); why != "" {
				return name + " " + why
			}
		}
		if p.Format == "uuid" && !store.ValidUUID(str) {
			return fmt.Sprintf("%s must be a uuid such as 3f2c5a8e-1b7d-4c9a-9e2f-6a1d0c4b8e71, got %q", name, str)
		}
		if len(p.Enum) > 0 && !containsString(p.Enum, str) {
			return fmt.Sprintf("%s must be one of %s, got %q", name, strings.Join(p.Enum, ", "), str)
		}
	case "integer":
		f, ok := v.(float64)
		if !ok {
			return fmt.Sprintf("%s must be an integer, got %s", name, jsonType(v))
		}
		if f != math.Trunc(f) || math.IsInf(f, 0) {
			return fmt.Sprintf("%s must be an integer, got %v", name, f)
		}
		if p.Minimum != nil && f < float64(*p.Minimum) {
			return fmt.Sprintf("%s must be at least %d, got %v", name, *p.Minimum, f)
		}
		if p.Maximum != nil && f > float64(*p.Maximum) {
			return fmt.Sprintf("%s must be at most %d, got %v", name, *p.Maximum, f)
		}
	}
	return ""
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
