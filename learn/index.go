package learn

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/hoist-mcp/hoist/flow"
)

// Limits of the value index.
const (
	maxDepth   = 32
	maxScalars = 20000 // per result
)

// indexer finds where a value occurs in an episode's results so far: for each
// result, every scalar's paths, built once, on first use.
type indexer struct {
	docs map[*flow.Result]map[string][]string // scalar key → paths ("", ".a.b[0]")
}

func newIndexer() *indexer { return &indexer{docs: map[*flow.Result]map[string][]string{}} }

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

func (ix *indexer) index(r *flow.Result) map[string][]string {
	if m, ok := ix.docs[r]; ok {
		return m
	}
	m := map[string][]string{}
	n := 0
	var walk func(v any, path string, depth int)
	walk = func(v any, path string, depth int) {
		if n >= maxScalars || depth > maxDepth {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k], path+member(k), depth+1)
			}
		case []any:
			for i, e := range x {
				walk(e, path+"["+strconv.Itoa(i)+"]", depth+1)
			}
		default:
			if k := scalarKey(v); k != "" {
				m[k] = append(m[k], path)
				n++
			}
		}
	}
	walk(r.Doc(), "", 0)
	ix.docs[r] = m
	return m
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
func (ix *indexer) candidates(scope *flow.Scope, v any) []string {
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
			r    *flow.Result
			root string
		}{{scope.Site, "$result"}}
		for i := len(scope.Calls) - 1; i >= 0; i-- {
			r := scope.Calls[i]
			if r == nil || r == scope.Site || r.Tool == "" || strings.ContainsAny(r.Tool, "]\"") || scope.Last(r.Tool) != r {
				continue
			}
			roots = append(roots, struct {
				r    *flow.Result
				root string
			}{r, "$last[" + r.Tool + "]"})
		}
	roots:
		for _, rt := range roots {
			if !mayContain(rt.r.Text, v) {
				continue // not there: no need to parse it
			}
			for _, p := range ix.index(rt.r)[key] {
				if p == "" && rt.root == "$result" {
					if _, isText := v.(string); isText && scope.Site.Text == v {
						continue // $text says it better
					}
				}
				if !add(rt.root + p) {
					break roots
				}
				for _, fp := range fanVariants(p) {
					if !add(rt.root + fp) {
						break roots
					}
				}
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	return []string{flow.Canonical(v)}
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
