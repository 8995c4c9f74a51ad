package lighthouse

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sync"
)

// decodeDetails is json.Unmarshal(raw, v) for an audit's details (valid JSON: the report's walk
// validated it), v a pointer to the struct a part of the extraction reads. json.Unmarshal reads
// every byte of the details twice (it validates them, then decodes them through its scanner):
// a fifth of an extraction's CPU (issue 46 item 4). decodeDetails walks them once, reading the
// fields of v's type (their json tags) and skipping the rest as valid JSON, strings found many
// bytes at a time. Where it cannot read them as json.Unmarshal would (a key that matches a field
// only ignoring case or through escapes, a field twice, a value of another type, a kind it does
// not decode, or v already holding something), v is set back to zero and json.Unmarshal
// decodes it: its answer, error and partial result included, is the rule (FuzzExtract holds
// the two to each other).
func decodeDetails(raw []byte, v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() && rv.Elem().IsZero() {
		w := &walker{b: raw, valid: true}
		i := skipWS(raw, 0)
		if i < len(raw) {
			end := w.value(i, 0, rv.Elem())
			if !w.failed && end >= 0 && skipWS(raw, end) == len(raw) {
				return true
			}
		}
		rv.Elem().SetZero()
	}
	return json.Unmarshal(raw, v) == nil
}

// structFields is what value reads of a struct type: its fields' JSON names and indexes.
type structFields struct {
	names []string
	index []int
}

var structTypes sync.Map // reflect.Type -> *structFields

// fieldsOf is t's fields by their json tags; nil when value does not read t (a field without a
// tag, with options, embedded or unexported, or more than 64: json.Unmarshal decodes those).
func fieldsOf(t reflect.Type) *structFields {
	if f, ok := structTypes.Load(t); ok {
		return f.(*structFields)
	}
	f := &structFields{}
	for i := range t.NumField() {
		sf := t.Field(i)
		name := sf.Tag.Get("json")
		if sf.Anonymous || !sf.IsExported() || name == "" || name == "-" || bytes.ContainsAny([]byte(name), ",\\") || i >= 64 {
			f = nil
			break
		}
		f.names, f.index = append(f.names, name), append(f.index, i)
	}
	structTypes.Store(t, f)
	return f
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// value decodes the JSON value at b[i] into v (a zero value of its type, settable) as
// json.Unmarshal would, and returns the value's end; failed where it cannot.
func (w *walker) value(i, depth int, v reflect.Value) int {
	if v.Type() == rawMessageType {
		m := v.Addr().Interface().(*json.RawMessage)
		if w.isNull(i) { // json.Unmarshal keeps null in a RawMessage
			*m = json.RawMessage(w.b[i : i+4])
			return i + 4
		}
		return w.raw(i, depth, m)
	}
	switch v.Kind() {
	case reflect.String:
		var s string
		end := w.str(i, depth, &s)
		v.SetString(s)
		return end
	case reflect.Float64:
		var f float64
		end := w.num(i, &f)
		v.SetFloat(f)
		return end
	case reflect.Bool:
		switch {
		case w.isNull(i):
			return i + 4
		case len(w.b)-i >= 4 && string(w.b[i:i+4]) == "true":
			v.SetBool(true)
			return i + 4
		case len(w.b)-i >= 5 && string(w.b[i:i+5]) == "false":
			return i + 5
		}
		return w.fail()
	case reflect.Pointer:
		if w.isNull(i) {
			return i + 4
		}
		p := reflect.New(v.Type().Elem())
		end := w.value(i, depth, p.Elem())
		v.Set(p)
		return end
	case reflect.Slice:
		if w.isNull(i) {
			return i + 4
		}
		s := reflect.MakeSlice(v.Type(), 0, 4)
		end := w.array(i, depth, func(e int) int {
			s = reflect.Append(s, reflect.Zero(v.Type().Elem()))
			return w.value(e, depth+1, s.Index(s.Len()-1))
		})
		v.Set(s)
		return end
	case reflect.Struct:
		sf := fieldsOf(v.Type())
		if sf == nil {
			return w.unmarshal(i, depth, v.Addr().Interface())
		}
		if w.isNull(i) {
			return i + 4
		}
		f := fields{w: w, names: sf.names}
		return w.object(i, depth, func(key []byte, val int) int {
			if n := f.match(key); n >= 0 {
				return w.value(val, depth+1, v.Field(sf.index[n]))
			}
			return w.skip(val, depth+1)
		})
	}
	if v.Kind() == reflect.Interface && v.NumMethod() == 0 && w.b[i] == '"' { // a string, as json.Unmarshal gives it
		var s string
		end := w.str(i, depth, &s)
		v.Set(reflect.ValueOf(s))
		return end
	}
	// Other interfaces, maps, other numbers: as json.Unmarshal decodes them.
	return w.unmarshal(i, depth, v.Addr().Interface())
}
