package mcplog

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
)

// ErrNotSessionLog is wrapped by the error a Reader returns for a file whose
// first line is not a hoist_mcp_log header, so that a directory scan can
// name such a file and skip it (issue 3, point 8).
var ErrNotSessionLog = errors.New("not a hoist-mcp session log")

// InputError is bad input at a place in a file: it prints as
// "file:line: field: message", leaving out the parts it does not know
// (STYLE.md, "Naming, errors, comments"). Line counts from 1; 0 means the
// whole file. Field is the JSON member at fault, such as "t_ms" or
// "simulations[2].messages[5].tool_calls", or "" for the whole line.
type InputError struct {
	File  string
	Line  int
	Field string
	Err   error
}

// Error returns "file:line: field: message".
func (e *InputError) Error() string {
	var parts []string
	switch {
	case e.File != "" && e.Line > 0:
		parts = append(parts, e.File+":"+strconv.Itoa(e.Line))
	case e.File != "":
		parts = append(parts, e.File)
	case e.Line > 0:
		parts = append(parts, "line "+strconv.Itoa(e.Line))
	}
	if e.Field != "" {
		parts = append(parts, e.Field)
	}
	msg := "bad input"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	return strings.Join(append(parts, msg), ": ")
}

// Unwrap returns the underlying error.
func (e *InputError) Unwrap() error { return e.Err }

// TypeWord names a Go type as JSON calls it, with its article, for
// messages such as "want a string, got a JSON number".
func TypeWord(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "a value"
}
