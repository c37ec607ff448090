package learn

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/jsontext"
)

// Limits of the value index.
const (
	maxDepth   = 32
	maxScalars = 20000 // per result
)

// indexer finds where a value occurs in an episode's results so far.
// It walks a result only when its text may hold the value (mayContain), and
// builds a path only where it finds the value, so learning stays linear in
// the results' size and allocates little.
type indexer struct {
	seen []string // scratch: tools met walking back through the scope
}

func newIndexer() *indexer { return &indexer{} }

// scalarKey returns a key for a JSON scalar, "" for anything else.
func scalarKey(v any) string {
	switch x := v.(type) {
	case string:
		return "s" + x
	case json.Number:
		return "n" + string(x)
	case bool:
		if x {
			return "btrue"
		}
		return "bfalse"
	}
	return ""
}

// sameScalar reports whether the document value d is the scalar v.
func sameScalar(d, v any) bool {
	switch x := v.(type) {
	case string:
		y, ok := d.(string)
		return ok && x == y
	case json.Number:
		y, ok := d.(json.Number)
		return ok && x == y
	case bool:
		y, ok := d.(bool)
		return ok && x == y
	}
	return false
}

// paths calls emit with the path ("", ".a.b[0]", in key order) of every
// place the scalar v occurs in doc, until emit returns false.
func (ix *indexer) paths(doc any, v any, emit func(path string) bool) {
	var buf []byte
	n := 0
	var walk func(d any, depth int) bool
	walk = func(d any, depth int) bool {
		if n >= maxScalars || depth > maxDepth {
			return true
		}
		switch x := d.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				mark := len(buf)
				buf = append(buf, member(k)...)
				if !walk(x[k], depth+1) {
					return false
				}
				buf = buf[:mark]
			}
		case []any:
			for i, e := range x {
				mark := len(buf)
				buf = append(buf, '[')
				buf = strconv.AppendInt(buf, int64(i), 10)
				buf = append(buf, ']')
				if !walk(e, depth+1) {
					return false
				}
				buf = buf[:mark]
			}
		default:
			n++
			if sameScalar(d, v) {
				return emit(string(buf))
			}
		}
		return true
	}
	walk(doc, 0)
}

func member(k string) string {
	plain := k != ""
	for i := 0; i < len(k) && plain; i++ {
		c := k[i]
		plain = c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	if plain {
		return "." + k
	}
	q, _ := json.Marshal(k)
	return "[" + string(q) + "]"
}

// fanVariants returns path with each one of its array indexes replaced by
// [*], in order.
func fanVariants(path string) []string {
	var out []string
	for i := 0; i < len(path); i++ {
		if path[i] != '[' || i+1 >= len(path) || path[i+1] < '0' || path[i+1] > '9' {
			continue
		}
		j := strings.IndexByte(path[i:], ']')
		if j < 0 {
			break
		}
		out = append(out, path[:i]+"[*]"+path[i+j+1:])
	}
	return out
}

// candidates returns the binding expressions that give v in scope, best
// first: the site's whole text, paths into the site's result, paths into the
// latest result of each earlier tool; a constant when none does.
func (ix *indexer) candidates(scope *binding.Scope, v any) []string {
	var out []string
	add := func(s string) bool {
		for _, o := range out {
			if o == s {
				return true
			}
		}
		out = append(out, s)
		return len(out) < maxRefsPerArg
	}
	key := scalarKey(v)
	if key != "" && scope.Site != nil {
		if s, ok := v.(string); ok && scope.Site.Text == s {
			add("$text")
		}
		roots := []struct {
			r    *binding.Result
			root string
		}{{scope.Site, "$result"}}
		seen := ix.seen[:0]
		defer func() { ix.seen = seen[:0] }()
		for i := len(scope.Calls) - 1; i >= 0; i-- {
			r := scope.Calls[i]
			if r == nil || slices.Contains(seen, r.Tool) {
				continue
			}
			seen = append(seen, r.Tool) // the first from the end is the latest, as $last reads it
			if r == scope.Site || r.Tool == "" || strings.ContainsAny(r.Tool, "]\"") {
				continue
			}
			roots = append(roots, struct {
				r    *binding.Result
				root string
			}{r, "$last[" + r.Tool + "]"})
		}
		for _, rt := range roots {
			if !mayContain(rt.r.Text, v) {
				continue // not there: no need to parse it
			}
			full := false
			ix.paths(rt.r.Doc(), v, func(p string) bool {
				if p == "" && rt.root == "$result" {
					if _, isText := v.(string); isText && scope.Site.Text == v {
						return true // $text says it better
					}
				}
				if !add(rt.root + p) {
					full = true
					return false
				}
				for _, fp := range fanVariants(p) {
					if !add(rt.root + fp) {
						full = true
						return false
					}
				}
				return true
			})
			if full {
				break
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	return []string{jsontext.Canonical(v)}
}

// mayContain reports whether a result's text may hold the scalar v: false
// only when v's plain text is not in it and could not be escaped there, so
// most results are never parsed for most values.
func mayContain(text string, v any) bool {
	var lit string
	switch x := v.(type) {
	case string:
		for i := 0; i < len(x); i++ {
			if c := x[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '/' || c == '<' || c == '>' || c == '&' {
				return true // JSON may escape it
			}
		}
		lit = x
	case json.Number:
		lit = string(x)
	case bool:
		lit = "false"
		if x {
			lit = "true"
		}
	default:
		return true
	}
	return strings.Contains(text, lit)
}
