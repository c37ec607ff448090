package flow

import "github.com/hoist-mcp/hoist/binding"

// Narrow counts a fan-out over every element of a list ($result.x[*])
// narrowed to the elements the customer named ($result.x[said],
// binding.Narrow), over the occurrences where the narrowing bound: the
// calls the narrowed fan-out would have made and how many of them the
// agent made, and the same of the whole fan-out (AllCalls, AllUsed) in
// those occurrences. Served, a fan-out narrows when the conversation
// names elements of its list and the narrowed fan-out earned more there
// (BindingValue) than the whole: a customer who named one reservation of
// five is looked up that one, where agents check that one only.
type Narrow struct {
	Calls    Count `json:"calls"`
	Used     Count `json:"used"`
	AllCalls Count `json:"all_calls"`
	AllUsed  Count `json:"all_used"`
}

func (n *Narrow) validate(field string, check func(string, Count, int) error) error {
	for _, c := range []struct {
		name string
		c    Count
		max  int
	}{{"calls", n.Calls, 1 << 40}, {"used", n.Used, n.Calls.N}, {"all_calls", n.AllCalls, 1 << 40}, {"all_used", n.AllUsed, n.AllCalls.N}} {
		if err := check(field+"."+c.name, c.c, c.max); err != nil {
			return err
		}
	}
	return nil
}

// Pays reports whether, in fold f, the narrowed fan-out earned more than
// the whole where it bound, at threshold t and a detour of scale detours,
// and reproduced at least min of the agent's calls.
func (n *Narrow) Pays(f int, t, scale float64, min int) bool {
	used := n.Used.For(f)
	if used < min {
		return false
	}
	return BindingValue(used, n.Calls.For(f), t, scale) > BindingValue(n.AllUsed.For(f), n.AllCalls.For(f), t, scale)
}

// narrowing is a fan-out's narrowed arguments, made once per session.
type narrowing struct {
	args map[string]binding.Expr
	text map[string]string
	p    float64 // P(binding) of the narrowed fan-out, in the fold
}

// narrowed returns best's narrowing when it pays in the session's fold,
// else nil.
func (s *Session) narrowed(b *Bound, scale float64) *narrowing {
	if b.Narrow == nil || s.scope.Said.Len() == 0 || !b.Narrow.Pays(s.fold, s.opt.Rule.Threshold, scale, max(s.f.MinSupport, 1)) {
		return nil
	}
	if n, ok := s.narrows[b]; ok {
		return n
	}
	var n *narrowing
	if args, ok := binding.Narrow(s.argNames(b), b.Args); ok {
		n = &narrowing{args: args, text: map[string]string{}}
		for k, e := range args {
			n.text[k] = e.String()
		}
		if c := b.Narrow.Calls.For(s.fold); c > 0 {
			n.p = float64(b.Narrow.Used.For(s.fold)) / float64(c)
		}
	}
	if s.narrows == nil {
		s.narrows = map[*Bound]*narrowing{}
	}
	s.narrows[b] = n
	return n
}

// addNarrow adds src's counts to dst (either may be nil), over k folds.
func addNarrow(dst, src *Narrow, k int) *Narrow {
	if src == nil {
		return dst
	}
	if dst == nil {
		dst = &Narrow{Calls: NewCount(k), Used: NewCount(k), AllCalls: NewCount(k), AllUsed: NewCount(k)}
	}
	addCounts(&dst.Calls, src.Calls)
	addCounts(&dst.Used, src.Used)
	addCounts(&dst.AllCalls, src.AllCalls)
	addCounts(&dst.AllUsed, src.AllUsed)
	return dst
}
