// Package toolpin pins a server's tool definitions and says what changed
// in a later listing: a defence against a server that changes a tool's
// description or schema after it was approved (a "rug pull", or tool
// poisoning through a description the model reads).
//
// A definition is a tools/list entry as the server listed it: name, title,
// description, inputSchema, outputSchema, annotations and any member a
// later MCP revision adds. Two definitions are the same when they are
// equal as JSON values (member order and spacing ignored); a Digest names
// one (sha256 of its canonical JSON). The pin file (File, written by
// hoist tools pin) holds a server's definitions and their digests; Compare
// names, for each tool a listing changed, added or removed, the members
// that differ. It is pure: the proxy calls it on each tools/list answer
// (hoist-mcp --pin-tools), hoist tools between recorded sessions.
package toolpin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// Version is the value of the pin file's hoist_tool_pin member.
const Version = 1

// File is a pin file: a server's tools as they were pinned. Its JSON:
//
//	{
//	  "hoist_tool_pin": 1,
//	  "server": "weather",
//	  "pinned_from": "20261204T101500.000Z-4242",
//	  "pinned_unix_ms": 1796379300000,
//	  "tools": [
//	    {"name": "get_weather", "digest": "sha256:…",
//	     "definition": {"name": "get_weather", "description": "…", "inputSchema": {…}}}
//	  ]
//	}
//
// server is the server's name (the log header's server_name, else
// initialize's serverInfo.name); pinned_from and pinned_unix_ms say which
// session's listing was pinned and when it was listed, and may be empty
// and 0 for a file written by hand. Each tool's digest is Digest of its
// definition, which Read checks.
type File struct {
	Pin          int    `json:"hoist_tool_pin"`
	Server       string `json:"server"`
	PinnedFrom   string `json:"pinned_from"`
	PinnedUnixMS int64  `json:"pinned_unix_ms"`
	Tools        []Tool `json:"tools"`
}

// Tool is one tool's definition: its name, the tools/list entry exactly as
// listed (Definition), and Digest of it.
type Tool struct {
	Name       string          `json:"name"`
	Digest     string          `json:"digest"`
	Definition json.RawMessage `json:"definition"`
}

// NewTool returns the Tool of a tools/list entry (valid JSON), and false
// when the entry is not an object with a name.
func NewTool(entry []byte) (Tool, bool) {
	v, ok := jsontext.Parse(entry)
	obj, isObj := v.(map[string]any)
	name, hasName := obj["name"].(string)
	if !ok || !isObj || !hasName || name == "" {
		return Tool{}, false
	}
	return Tool{Name: name, Digest: digestOf(obj), Definition: json.RawMessage(bytes.Clone(entry))}, true
}

// FromList returns the tools of a tools/list result (the result member),
// in order; an entry without a name is left out. nextCursor is the
// result's, "" on the last page.
func FromList(result []byte) (tools []Tool, nextCursor string) {
	if v, ok := jsontext.Lookup(result, "nextCursor"); ok && jsontext.Kind(v) == '"' {
		nextCursor = jsontext.Unquote(v)
	}
	list, ok := jsontext.Lookup(result, "tools")
	if !ok || jsontext.Kind(list) != '[' {
		return nil, nextCursor
	}
	for el := range jsontext.Elements(list) {
		if t, ok := NewTool(el); ok {
			tools = append(tools, t)
		}
	}
	return tools, nextCursor
}

// Digest returns the digest of a definition: "sha256:" and the hex SHA-256
// of its canonical JSON (members sorted, no spaces: jsontext.Canonical),
// so that member order and spacing do not change it.
func Digest(definition []byte) string {
	v, ok := jsontext.Parse(definition)
	if !ok {
		sum := sha256.Sum256(definition)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	return digestOf(v)
}

func digestOf(v any) string {
	sum := sha256.Sum256([]byte(jsontext.Canonical(v)))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// digest returns t.Digest, or the definition's when it is not set (a Tool
// made by hand): NewTool sets it, and Read checks it.
func (t Tool) digest() string {
	if t.Digest != "" {
		return t.Digest
	}
	return Digest(t.Definition)
}

// The kinds of Change.
const (
	Changed = "changed" // the tool is listed with another definition
	Added   = "added"   // listed, not pinned
	Removed = "removed" // pinned, not listed
)

// Change is one tool whose definition differs between the pinned and the
// listed tools.
type Change struct {
	Tool string `json:"tool"`
	Kind string `json:"kind"`
	// Fields are, for Changed, the definition's members that differ
	// (description, inputSchema, annotations ...), sorted.
	Fields []string `json:"fields,omitempty"`
	// Pinned and Listed are the definitions, nil where there is none.
	Pinned json.RawMessage `json:"pinned,omitempty"`
	Listed json.RawMessage `json:"listed,omitempty"`
}

// String says the change in a few words: "get_weather changed:
// description, inputSchema".
func (c Change) String() string {
	if c.Kind == Changed {
		return fmt.Sprintf("%s changed: %s", c.Tool, join(c.Fields))
	}
	return c.Tool + " " + c.Kind
}

func join(fields []string) string {
	var b bytes.Buffer
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f)
	}
	return b.String()
}

// Compare returns how listed differs from pinned: each pinned tool listed
// with another definition (naming the members that differ) or not listed,
// in pinned order, then each listed tool not pinned, in listed order. None
// means the listing is the pinned one (order of tools aside). A tool
// listed twice is changed when either listing differs from the pinned
// one: a host may take either.
func Compare(pinned, listed []Tool) []Change {
	byName := map[string]Tool{}
	for _, t := range listed {
		first, ok := byName[t.Name]
		if !ok || first.digest() != t.digest() && t.digest() != pinnedDigest(pinned, t.Name) {
			byName[t.Name] = t // the first listing, or a later one that differs from the pin
		}
	}
	pinnedNames := map[string]bool{}
	var out []Change
	for _, p := range pinned {
		if pinnedNames[p.Name] {
			continue
		}
		pinnedNames[p.Name] = true
		l, ok := byName[p.Name]
		switch {
		case !ok:
			out = append(out, Change{Tool: p.Name, Kind: Removed, Pinned: p.Definition})
		case p.digest() != l.digest():
			out = append(out, Change{Tool: p.Name, Kind: Changed, Fields: Fields(p.Definition, l.Definition), Pinned: p.Definition, Listed: l.Definition})
		}
	}
	for _, l := range listed {
		if !pinnedNames[l.Name] {
			pinnedNames[l.Name] = true
			out = append(out, Change{Tool: l.Name, Kind: Added, Listed: l.Definition})
		}
	}
	return out
}

// pinnedDigest returns the digest of the tool pinned under name, "" when
// none is.
func pinnedDigest(pinned []Tool, name string) string {
	for _, p := range pinned {
		if p.Name == name {
			return p.digest()
		}
	}
	return ""
}

// Fields returns the members of two JSON objects, such as two definitions,
// that differ (by value, whatever the order of members; a member one
// lacks differs), sorted.
func Fields(a, b []byte) []string {
	ma, _ := parse(a).(map[string]any)
	mb, _ := parse(b).(map[string]any)
	var out []string
	for k, va := range ma {
		if vb, ok := mb[k]; !ok || jsontext.Canonical(va) != jsontext.Canonical(vb) {
			out = append(out, k)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func parse(b []byte) any {
	v, _ := jsontext.Parse(b)
	return v
}

// Marshal returns the pin file's JSON, indented, with a final newline.
func Marshal(f *File) []byte {
	if f.Tools == nil {
		f.Tools = []Tool{}
	}
	b, _ := json.MarshalIndent(f, "", "  ")
	return append(b, '\n')
}

// FieldError is a pin file's problem at a member: "tools[2].digest: ...".
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *FieldError) Unwrap() error { return e.Err }

// Read reads a pin file's content, checking its version, that every tool
// has a name matching its definition's, and that every digest is its
// definition's (a definition edited by hand without its digest is
// refused). A problem is a *FieldError naming the member.
func Read(b []byte) (*File, error) {
	if !jsontext.Valid(b) {
		return nil, &FieldError{"", errors.New("not JSON")}
	}
	var f File
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&f); err != nil {
		return nil, &FieldError{"", fmt.Errorf("not a pin file: %v", err)}
	}
	if f.Pin != Version {
		return nil, &FieldError{"hoist_tool_pin", fmt.Errorf("want %d, got %d (is this a pin file from hoist tools pin?)", Version, f.Pin)}
	}
	seen := map[string]bool{}
	for i, t := range f.Tools {
		at := fmt.Sprintf("tools[%d]", i)
		def, ok := NewTool(t.Definition)
		switch {
		case !ok:
			return nil, &FieldError{at + ".definition", errors.New("want a tool definition: an object with a name")}
		case t.Name != def.Name:
			return nil, &FieldError{at + ".name", fmt.Errorf("%q, but the definition names %q", t.Name, def.Name)}
		case seen[t.Name]:
			return nil, &FieldError{at + ".name", fmt.Errorf("%q is pinned twice", t.Name)}
		case t.Digest != def.Digest:
			return nil, &FieldError{at + ".digest", fmt.Errorf("%s, but the definition's is %s: was it edited?", t.Digest, def.Digest)}
		}
		seen[t.Name] = true
	}
	return &f, nil
}

// Description returns the definition's description, "" when it has none.
func (t Tool) Description() string {
	if v, ok := jsontext.Lookup(t.Definition, "description"); ok && jsontext.Kind(v) == '"' {
		return jsontext.Unquote(v)
	}
	return ""
}

// ReadOnly returns the definition's readOnlyHint, and whether it gives one.
func (t Tool) ReadOnly() (readOnly, ok bool) {
	a, _ := jsontext.Lookup(t.Definition, "annotations")
	return mcpmsg.ReadOnlyHint(a)
}

// Inputs returns the names of the input schema's properties, in order.
func (t Tool) Inputs() []string {
	schema, _ := jsontext.Lookup(t.Definition, "inputSchema")
	props, _ := jsontext.Lookup(schema, "properties")
	var out []string
	for name := range jsontext.Members(props) {
		out = append(out, string(name))
	}
	return out
}
