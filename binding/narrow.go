package binding

import "strings"

// Narrow returns the arguments of a lookup that fans out over every
// element of a list ([*]) narrowed to the elements the customer named:
// each [*] becomes [said], or [said.path] where the first fanned argument
// (in names' order) reads path of each element, so that arguments that
// zip over the list keep zipping over the same elements. A customer who
// named one reservation of five gets one lookup, not five (issue 26,
// lever 3). It returns false when no argument fans out by [*], or one is
// a template or an array (no narrowing of those).
func Narrow(names []string, args map[string]Expr) (map[string]Expr, bool) {
	filter, found := "", false
	for _, name := range names {
		e, ok := args[name]
		if !ok || !e.fan {
			continue
		}
		if e.root == rootConcat || e.root == rootArray || e.Said() {
			return nil, false
		}
		s := e.String()
		i := strings.Index(s, "[*]")
		if i < 0 {
			return nil, false
		}
		if !found {
			filter, found = s[i+3:], true
		}
	}
	if !found {
		return nil, false
	}
	out := make(map[string]Expr, len(args))
	for name, e := range args {
		if !e.fan {
			out[name] = e
			continue
		}
		s := e.String()
		i := strings.Index(s, "[*]")
		n, err := Parse(s[:i] + "[said" + filter + "]" + s[i+3:])
		if err != nil {
			return nil, false
		}
		out[name] = n
	}
	return out, true
}
