package mcp

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"
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

// outputSchema is the JSON Schema of what encoding/json makes of a value of type t. It is the
// one derivation of every tool's outputSchema from the Go type its handler returns (tool.Output),
// so the schema a client validates structuredContent against cannot drift from the payload:
// a struct is an object whose properties are its JSON fields (embedded structs flattened, the
// shallower field winning as in encoding/json), required unless omitempty, and nothing else
// (additionalProperties false); a pointer, slice or map may also be null, as encoding/json
// writes a nil one.
func outputSchema(t reflect.Type) map[string]any {
	return typeSchema(t, 0)
}

func typeSchema(t reflect.Type, depth int) map[string]any {
	if depth > 32 {
		panic("mcp: outputSchema: type nests too deep: " + t.String())
	}
	nullable := func(m map[string]any) map[string]any {
		if typ, ok := m["type"].(string); ok {
			m["type"] = []string{typ, "null"}
		}
		return m
	}
	if t == reflect.TypeFor[time.Time]() {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return nullable(typeSchema(t.Elem(), depth+1))
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Slice:
		return nullable(map[string]any{"type": "array", "items": typeSchema(t.Elem(), depth+1)})
	case reflect.Array:
		return map[string]any{"type": "array", "items": typeSchema(t.Elem(), depth+1)}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic("mcp: outputSchema: map key is not a string: " + t.String())
		}
		m := map[string]any{"type": "object"}
		if t.Elem().Kind() != reflect.Interface {
			m["additionalProperties"] = typeSchema(t.Elem(), depth+1)
		}
		return nullable(m)
	case reflect.Struct:
		props := map[string]any{}
		required := []string{}
		for _, f := range jsonFields(t) {
			props[f.name] = typeSchema(f.typ, depth+1)
			if !f.omitEmpty {
				required = append(required, f.name)
			}
		}
		sort.Strings(required)
		return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
	}
	panic("mcp: outputSchema: no JSON Schema for " + t.String())
}

type jsonField struct {
	name      string
	typ       reflect.Type
	omitEmpty bool
	depth     int
}

// jsonFields lists the fields encoding/json writes for struct type t.
func jsonFields(t reflect.Type) []jsonField {
	byName := map[string]jsonField{}
	var order []string
	var walk func(t reflect.Type, depth int)
	walk = func(t reflect.Type, depth int) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if sf.Anonymous && name == "" {
				ft := sf.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, depth+1)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			f := jsonField{name: name, typ: sf.Type, omitEmpty: strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,"), depth: depth}
			if old, ok := byName[name]; ok {
				if old.depth <= depth {
					continue
				}
			} else {
				order = append(order, name)
			}
			byName[name] = f
		}
	}
	walk(t, 0)
	out := make([]jsonField, 0, len(order))
	for _, n := range order {
		out = append(out, byName[n])
	}
	return out
}
