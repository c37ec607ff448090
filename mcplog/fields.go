package mcplog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/hoist-mcp/hoist/jsontext"
)

// fields decodes the members of a log line's objects (the flow log's; the
// guards and confirm logs' alike) into Go values by jsontext's rules, each
// checked for its kind. A mismatch is kept in err as an *InputError whose
// Field is the member's path from the line, such as "offers[1].p_reach".
// A null member decodes as the zero value, as encoding/json's does.
type fields struct {
	at  string // the path of the object being decoded; "" for the line
	err *InputError
}

// in returns the fields of the member name's object.
func (f *fields) in(name string) fields { return fields{at: f.path(name)} }

func (f *fields) path(name string) string {
	switch {
	case f.at == "":
		return name
	case name == "":
		return f.at
	}
	return f.at + "." + name
}

// want records that member name is not what, and returns the error.
func (f *fields) want(name, what string, val []byte) *InputError {
	got := "a JSON " + kindWord(val)
	if what == "an integer" && kindWord(val) == "number" {
		got = clip(val) // a number, but not a whole one
	}
	f.err = &InputError{Field: f.path(name), Err: fmt.Errorf("want %s, got %s", what, got)}
	return f.err
}

func kindWord(val []byte) string {
	switch jsontext.Kind(val) {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func isNull(val []byte) bool { return string(val) == "null" }

// missing is the error of a member a line needs.
func missing(name string) *InputError {
	return &InputError{Field: name, Err: errors.New("missing")}
}

// object reports whether val is an object, recording that member name
// should be one when it is not.
func (f *fields) object(val []byte, name string) bool {
	if jsontext.Kind(val) == '{' {
		return true
	}
	f.want(name, "an object", val)
	return false
}

func (f *fields) str(name string, val []byte) string {
	switch jsontext.Kind(val) {
	case '"':
		return jsontext.Unquote(val)
	case 'n':
		return ""
	}
	f.want(name, "a string", val)
	return ""
}

func (f *fields) bool(name string, val []byte) bool {
	switch string(val) {
	case "true":
		return true
	case "false", "null":
		return false
	}
	f.want(name, "a boolean", val)
	return false
}

func (f *fields) float(name string, val []byte) float64 {
	if isNull(val) {
		return 0
	}
	if k := kindWord(val); k == "number" {
		if x, err := strconv.ParseFloat(string(val), 64); err == nil {
			return x
		}
	}
	f.want(name, "a number", val)
	return 0
}

func (f *fields) int(name string, val []byte) int {
	if isNull(val) {
		return 0
	}
	if n, err := strconv.Atoi(string(val)); err == nil {
		return n
	}
	f.want(name, "an integer", val)
	return 0
}

// member names a member of an object and where its value goes: a
// *string, *int, *float64, *bool, *json.RawMessage (the value as it is),
// *map[string]string (an object of strings), or a func that decodes the
// value itself. A line type's decoder is its list of members: the schema as
// data.
type member struct {
	name string
	dst  any
}

// decode decodes the object b into ms, by name (compared exactly; a name
// repeated counts as its last occurrence); members not in ms are left
// alone, so a later writer may add some. Null leaves the zero value. The
// first mismatch stops it, in f.err.
func (f *fields) decode(b []byte, ms []member) {
	if !f.object(b, "") {
		return
	}
	for key, val := range jsontext.Members(b) {
		for _, m := range ms {
			if m.name == string(key) {
				f.set(m, val)
				break
			}
		}
		if f.err != nil {
			return
		}
	}
}

func (f *fields) set(m member, val []byte) {
	switch dst := m.dst.(type) {
	case *string:
		*dst = f.str(m.name, val)
	case *int:
		*dst = f.int(m.name, val)
	case *float64:
		*dst = f.float(m.name, val)
	case *bool:
		*dst = f.bool(m.name, val)
	case *json.RawMessage:
		*dst = json.RawMessage(val)
	case *map[string]string:
		*dst = f.strings(m.name, val)
	case func(*fields, []byte):
		dst(f, val)
	default:
		panic(fmt.Sprintf("mcplog: member %s: no decoder for %T", m.name, m.dst))
	}
}

// strOrNull decodes a string that may be null (nil).
func (f *fields) strOrNull(name string, val []byte) *string {
	if isNull(val) {
		return nil
	}
	if jsontext.Kind(val) != '"' {
		f.want(name, "a string or null", val)
		return nil
	}
	s := jsontext.Unquote(val)
	return &s
}

// stringList decodes an array of strings; null is none.
func (f *fields) stringList(name string, val []byte) []string {
	if isNull(val) {
		return nil
	}
	if jsontext.Kind(val) != '[' {
		f.want(name, "an array of strings", val)
		return nil
	}
	out := []string{}
	for el := range jsontext.Elements(val) {
		if jsontext.Kind(el) != '"' {
			f.want(name, "an array of strings", val)
			f.err.Err = fmt.Errorf("want an array of strings, got a JSON %s in it", kindWord(el))
			return nil
		}
		out = append(out, jsontext.Unquote(el))
	}
	return out
}

// strings decodes an object of strings, such as an offer's binding.
func (f *fields) strings(name string, val []byte) map[string]string {
	if isNull(val) || !f.object(val, name) {
		return nil
	}
	out := map[string]string{}
	in := f.in(name)
	for key, v := range jsontext.Members(val) {
		out[string(key)] = in.str(string(key), v)
		if in.err != nil {
			f.err = in.err
			return nil
		}
	}
	return out
}

// decodeList decodes the array val of member name with elem, each element
// with its index in its path; null is no list.
func decodeList[T any](f *fields, name string, val []byte, elem func(fields, []byte) (T, *InputError)) []T {
	if isNull(val) {
		return nil
	}
	if jsontext.Kind(val) != '[' {
		f.want(name, "an array", val)
		return nil
	}
	out := make([]T, 0, 4)
	i := 0
	for v := range jsontext.Elements(val) {
		x, err := elem(fields{at: f.path(name) + "[" + strconv.Itoa(i) + "]"}, v)
		if err != nil {
			f.err = err
			return nil
		}
		out = append(out, x)
		i++
	}
	return out
}
