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

// indexer finds where a value occurs in an episode's results so far, and
// in what the customer said. It walks a result only when its text may hold
// the value (mayContain), and builds a path only where it finds the value,
// so learning stays linear in the results' size and allocates little.
type indexer struct {
	seen []string // scratch: tools met walking back through the scope
	// site and args are the last site whose arguments were read, and
	// them as a result ($args), parsed once for all its values.
	site, args *binding.Result
	keys       [][]string // scratch: an object's sorted member names, by depth
	// latest caches latestSaid's answers while the conversation has
	// saidLen messages: they change only when the customer says more.
	latest  map[string]any
	named   map[string]bool
	saidLen int
	stack   []frame // scratch: the path being walked
	// positions finds [said#] bindings (Options.Positions).
	positions bool
	// descriptions finds [said~] bindings (Options.Descriptions).
	descriptions bool
}

// sortedKeys returns o's member names, sorted, in the scratch of depth.
func (ix *indexer) sortedKeys(o map[string]any, depth int) []string {
	for len(ix.keys) <= depth {
		ix.keys = append(ix.keys, nil)
	}
	keys := ix.keys[depth][:0]
	for k := range o {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ix.keys[depth] = keys
	return keys
}

// argsOf returns the site's arguments as a result, or nil.
func (ix *indexer) argsOf(site *binding.Result) *binding.Result {
	if site.Args == "" {
		return nil
	}
	if ix.site != site {
		ix.site, ix.args = site, binding.NewResult("", site.Args)
	}
	return ix.args
}

func newIndexer() *indexer { return &indexer{} }

// saidNow empties the caches of what was said when the customer said more.
func (ix *indexer) saidNow(scope *binding.Scope) {
	if n := scope.Said.Len(); ix.latest == nil || n != ix.saidLen {
		ix.latest, ix.named, ix.saidLen = map[string]any{}, map[string]bool{}, n
	}
}

// saidNamed is scope.Said.Named(s), remembered while nothing more is said.
func (ix *indexer) saidNamed(scope *binding.Scope, s string) bool {
	ix.saidNow(scope)
	named, ok := ix.named[s]
	if !ok {
		named = scope.Said.Named(s)
		ix.named[s] = named
	}
	return named
}

// latestSaid evaluates a $said[kind][-1] expression, the latest token of a
// kind the customer said, and reports whether it gave one value.
func (ix *indexer) latestSaid(scope *binding.Scope, expr string) (any, bool) {
	ix.saidNow(scope)
	if v, ok := ix.latest[expr]; ok {
		return v, v != nil
	}
	var v any
	if vs, err := binding.MustParse(expr).Eval(scope); err == nil && len(vs) == 1 {
		v = vs[0]
	}
	ix.latest[expr] = v
	return v, v != nil
}

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

// frame is one step of a path being walked: a member of an object or an
// element of a list, with the container it is in.
type frame struct {
	key    string // a member's name; "" for an element
	index  int
	parent any // the object or list the step is in
	value  any // what the step names
}

// pathString writes a path of frames as binding steps.
func pathString(fs []frame) string {
	var b strings.Builder
	for _, f := range fs {
		writeFrame(&b, f)
	}
	return b.String()
}

func writeFrame(b *strings.Builder, f frame) {
	if _, isList := f.parent.([]any); isList {
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(f.index))
		b.WriteByte(']')
		return
	}
	b.WriteString(member(f.key))
}

// paths calls emit with the frames (in key order) of every place the
// scalar v occurs in doc, until emit returns false.
func (ix *indexer) paths(doc any, v any, emit func(fs []frame) bool) {
	stack := ix.stack[:0]
	defer func() { ix.stack = stack[:0] }()
	n := 0
	var walk func(d any, depth int) bool
	walk = func(d any, depth int) bool {
		if n >= maxScalars || depth > maxDepth {
			return true
		}
		switch x := d.(type) {
		case map[string]any:
			for _, k := range ix.sortedKeys(x, depth) {
				stack = append(stack, frame{key: k, parent: x, value: x[k]})
				if !walk(x[k], depth+1) {
					return false
				}
				stack = stack[:len(stack)-1]
			}
		case []any:
			for i, e := range x {
				stack = append(stack, frame{index: i, parent: x, value: e})
				if !walk(e, depth+1) {
					return false
				}
				stack = stack[:len(stack)-1]
			}
		default:
			n++
			if sameScalar(d, v) {
				return emit(stack)
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

// variants returns a found path's fan-outs: with each one of its list
// indexes replaced by [*], then, where the customer named the element (or
// a member of it: its name, say) or an object's member, by [said] or
// [said.name], and by [said#] where the customer picked it by its position
// (when positions), and by [said~] where the customer described it by a
// value it holds (when descriptions).
func variants(fs []frame, said *binding.Said, positions, descriptions bool) []string {
	var out []string
	for i, f := range fs {
		if _, isList := f.parent.([]any); !isList {
			continue
		}
		out = append(out, pathString(fs[:i])+"[*]"+pathString(fs[i+1:]))
	}
	if said == nil || said.Len() == 0 {
		return out
	}
	for i, f := range fs {
		rest := pathString(fs[i+1:])
		if list, isList := f.parent.([]any); isList && positions {
			if k, ok := said.Pick(list); ok && k == f.index {
				out = append(out, pathString(fs[:i])+"[said#]"+rest)
			}
		}
		switch f.parent.(type) {
		case []any:
			if descriptions && said.Describes(f.value) {
				out = append(out, pathString(fs[:i])+"[said~]"+rest)
			}
			if said.Named(f.value) {
				out = append(out, pathString(fs[:i])+"[said]"+rest)
				continue
			}
			if obj, ok := f.value.(map[string]any); ok {
				keys := make([]string, 0, len(obj))
				for k := range obj {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					if s, ok := obj[k].(string); ok && len(s) >= 3 && said.Named(s) {
						out = append(out, pathString(fs[:i])+"[said"+member(k)+"]"+rest)
						break
					}
				}
			}
		case map[string]any:
			if len(f.key) >= 3 && said.Named(f.key) {
				out = append(out, pathString(fs[:i])+"[said]"+rest)
			}
		}
	}
	return out
}

// candidates returns the binding expressions that give v in scope, best
// first: the site's whole text, paths into the site's result, into the
// latest result of each earlier tool and into the site's arguments, the
// site's text line by line, and what the customer said; a constant when
// none does.
func (ix *indexer) candidates(scope *binding.Scope, v any) []string {
	out := ix.refs(scope, v, maxRefsPerArg)
	if len(out) > 0 {
		return out
	}
	return []string{jsontext.Canonical(v)}
}

// refs is candidates without the constant, at most max.
func (ix *indexer) refs(scope *binding.Scope, v any, max int) []string {
	var out []string
	add := func(s string) bool {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
		return len(out) < max
	}
	key := scalarKey(v)
	if key == "" || scope.Site == nil {
		return nil
	}
	if s, ok := v.(string); ok && scope.Site.Text == s {
		add("$text")
	}
	type root struct {
		r    *binding.Result
		root string
	}
	roots := []root{{scope.Site, "$result"}}
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
		roots = append(roots, root{r, "$last[" + r.Tool + "]"})
	}
	if a := ix.argsOf(scope.Site); a != nil {
		roots = append(roots, root{a, "$args"})
	}
	for _, rt := range roots {
		if !mayContain(rt.r.Text, v) {
			continue // not there: no need to parse it
		}
		full := false
		ix.paths(rt.r.Doc(), v, func(fs []frame) bool {
			if len(fs) == 0 && rt.root == "$result" {
				if _, isText := v.(string); isText && scope.Site.Text == v {
					return true // $text says it better
				}
			}
			if !add(rt.root + pathString(fs)) {
				full = true
				return false
			}
			for _, fp := range variants(fs, &scope.Said, ix.positions, ix.descriptions) {
				if !add(rt.root + fp) {
					full = true
					return false
				}
			}
			return true
		})
		if full {
			return out
		}
	}
	if s, ok := v.(string); ok && len(out) < max {
		for _, c := range lineRefs(scope.Site, s) {
			if !add(c) {
				return out
			}
		}
		for _, c := range ix.saidRefs(scope, s) {
			if !add(c) {
				return out
			}
		}
	}
	return out
}

// lineRefs returns the $lines expressions that give s from a site whose text
// is not JSON: the lines themselves, or what a line pattern captures.
func lineRefs(site *binding.Result, s string) []string {
	if s == "" || !strings.Contains(site.Text, s) {
		return nil
	}
	if _, isText := site.Doc().(string); !isText {
		return nil
	}
	var out []string
	lines := site.Lines()
	if len(lines) == 0 || len(lines) == 1 && lines[0] == s {
		return nil // the one line: $text says it; a part of it, a pattern may
	}
	for j, line := range lines {
		at := strings.Index(line, s)
		if at < 0 {
			continue
		}
		if line == s {
			out = append(out, "$lines[*]", "$lines["+strconv.Itoa(j)+"]")
			break
		}
		if strings.ContainsRune(line, '*') {
			continue
		}
		pattern := line[:at] + "*" + line[at+len(s):]
		k := 0
		for _, l := range lines[:j] {
			if c, ok := captureOf(pattern, l); ok && c != "" {
				k++
			}
		}
		q, _ := json.Marshal(pattern)
		out = append(out, "$lines["+string(q)+"][*]", "$lines["+string(q)+"]["+strconv.Itoa(k)+"]")
		break
	}
	return out
}

func captureOf(pattern, line string) (string, bool) {
	star := strings.IndexByte(pattern, '*')
	pre, suf := pattern[:star], pattern[star+1:]
	if len(line) < len(pre)+len(suf)+1 || !strings.HasPrefix(line, pre) || !strings.HasSuffix(line, suf) {
		return "", false
	}
	return line[len(pre) : len(line)-len(suf)], true
}

// saidRefs returns the $said expressions that give s, the latest token of
// its kind or shape the customer said, when the customer said s.
func (ix *indexer) saidRefs(scope *binding.Scope, s string) []string {
	if scope.Said.Len() == 0 || !ix.saidNamed(scope, s) {
		return nil
	}
	var kinds []string
	if strings.Count(s, "@") == 1 && strings.Contains(s[strings.IndexByte(s, '@'):], ".") {
		kinds = append(kinds, "email")
	} else {
		for _, level := range []binding.ShapeLevel{binding.ShapeWide, binding.ShapeExact, binding.ShapeRuns} {
			shape := binding.ShapeOf(s, level)
			if !slices.Contains(kinds, shape) {
				kinds = append(kinds, shape)
			}
		}
	}
	var out []string
	for _, k := range kinds {
		e := "$said[" + k + "]"
		if k != "email" {
			q, _ := json.Marshal(k)
			e = "$said[" + string(q) + "]"
		}
		// Only a kind whose latest token is the value: else the latest
		// token of the shape is another.
		if v, ok := ix.latestSaid(scope, e+"[-1]"); ok && v == s {
			out = append(out, e+"[-1]")
		}
	}
	return out
}

// templates returns expressions that build the string s from parts when no
// one reference gives it: one of the site's arguments, a separator and a
// reference (a directory joined with a listed name), a constant prefix and
// a reference (a prefix plus an id), or a reference and a constant suffix.
func (ix *indexer) templates(scope *binding.Scope, s string) []string {
	if len(s) < 2 || scope.Site == nil {
		return nil
	}
	var out []string
	add := func(t string) bool {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
		return len(out) < 2
	}
	quote := func(c string) string { q, _ := json.Marshal(c); return string(q) }
	// An argument of the site's call, a separator, then a reference.
	if a := ix.argsOf(scope.Site); a != nil {
		args, _ := a.Doc().(map[string]any)
		names := make([]string, 0, len(args))
		for k := range args {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			a, ok := args[k].(string)
			if !ok || a == "" || len(a) >= len(s) || !strings.HasPrefix(s, a) {
				continue
			}
			rest := s[len(a):]
			sep := 0
			for sep < len(rest) && sep < 2 && isSeparator(rest[sep]) {
				sep++
			}
			for _, r := range ix.refs(scope, rest[sep:], 2) {
				if !strings.HasPrefix(r, "$") || r == "$args"+member(k) {
					continue
				}
				t := "$args" + member(k) + " + " + r
				if sep > 0 {
					t = "$args" + member(k) + " + " + quote(rest[:sep]) + " + " + r
				}
				if !add(t) {
					return out
				}
			}
		}
	}
	// A constant prefix or suffix and a reference, cut where the kind of
	// character changes.
	for i := 1; i < len(s) && i <= 16; i++ {
		if !boundary(s, i) {
			continue
		}
		for _, r := range ix.refs(scope, s[i:], 1) {
			if !add(quote(s[:i]) + " + " + r) {
				return out
			}
		}
	}
	for i := len(s) - 1; i >= 1 && len(s)-i <= 16; i-- {
		if !boundary(s, i) {
			continue
		}
		for _, r := range ix.refs(scope, s[:i], 1) {
			if !add(r + " + " + quote(s[i:])) {
				return out
			}
		}
	}
	return out
}

func isSeparator(c byte) bool { return strings.IndexByte("/\\-_.:#@ ,|", c) >= 0 }

// boundary reports whether s changes kind of character at i: a separator
// on either side, or a letter next to a digit.
func boundary(s string, i int) bool {
	a, b := s[i-1], s[i]
	if isSeparator(a) != isSeparator(b) {
		return true
	}
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	letter := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	return digit(a) && letter(b) || letter(a) && digit(b)
}

// arrays returns expressions that collect a fan-out into the list of
// scalars v, element for element.
func (ix *indexer) arrays(scope *binding.Scope, v []any) []string {
	if len(v) == 0 || scalarKey(v[0]) == "" {
		return nil
	}
	want := jsontext.Canonical(v)
	var out []string
	for _, r := range ix.refs(scope, v[0], 16) {
		if !strings.Contains(r, "[*]") && !strings.Contains(r, "[said") {
			continue
		}
		e, err := binding.Parse("[" + r + "]")
		if err != nil {
			continue
		}
		if vs, err := e.Eval(scope); err == nil && len(vs) == 1 && jsontext.Canonical(vs[0]) == want {
			out = append(out, e.String())
			if len(out) == 2 {
				break
			}
		}
	}
	return out
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

// siteConds returns the conditions a site's result offers as predicates:
// each scalar member of its object, or of an object in it, equal to its
// value ($result.status == "delivered"), at most maxConds; with lists, a
// result, or a member of one, that is a list that is not empty ($result,
// $result.orders: a condition holds where the path is present and not
// empty, so it fails where the list is). Long strings (ids, texts) are
// left out: they are never the same in enough occurrences to be a
// predicate.
func siteConds(site *binding.Result, lists bool) []string {
	var out []string
	if l, ok := site.Doc().([]any); ok && lists && len(l) > 0 {
		out = append(out, "$result")
	}
	obj, ok := site.Doc().(map[string]any)
	if !ok {
		return out
	}
	var walk func(path string, o map[string]any, depth int)
	walk = func(path string, o map[string]any, depth int) {
		keys := make([]string, 0, len(o))
		for k := range o {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if len(out) >= maxConds {
				return
			}
			p := path + member(k)
			switch x := o[k].(type) {
			case string:
				if x != "" && len(x) <= 24 && !strings.ContainsAny(x, "\n\r") {
					out = append(out, p+" == "+jsontext.Canonical(x))
				}
			case bool, nil:
				out = append(out, p+" == "+jsontext.Canonical(x))
			case json.Number:
				if len(x) <= 6 {
					out = append(out, p+" == "+string(x))
				}
			case []any:
				if lists && len(x) > 0 {
					out = append(out, p)
				}
			case map[string]any:
				if depth < 2 {
					walk(p, x, depth+1)
				}
			}
		}
	}
	walk("$result", obj, 1)
	return out
}
