package flow

import (
	"maps"
	"math"
	"strings"

	"github.com/hoist-mcp/hoist/binding"
)

// The rest of a fan-out. A fan-out over a list of the site's result
// (get_reservation_details over $result.reservations[*] after
// get_user_details) pays in the sessions whose agent reads the list and is
// all detours in those whose agent reads none of it. The agent's first read
// of one element (its own get_reservation_details) is that session's sign:
// at that site the same lookup over the same list, read from the latest
// result of the first site's tool ($last[get_user_details].reservations[*]),
// looks up the elements not yet read (a call asked since the last write is
// never made again). In a flow learned with Learned.Rest, a fan-out whose
// rest so earns at the later site is not offered at the first: it waits
// for the agent's first read, one turn later, where it hits more often
// (Session.defers). learn's fit counts the rest's offers at the later site
// without changing the replay's course (Options.Rest, countRests).

// rest is where the rest of a fan-out is looked up: the site of the
// lookup's own tool, its lookup of that tool, and the index of the binding
// there that reads the fan-out's list from the first site's latest result.
type rest struct {
	site   *Site
	lookup *Lookup
	bi     int
}

// restOf returns where the rest of binding b of lookup l at site is looked
// up, or nil: b must fan out over the site's result ($result…[*]), its
// other arguments be constants or members of the site's result, and the
// site of l's tool (not failed) have, for l's tool, the binding that is
// b's with $result read as $last[site's tool].
func (f *Flow) restOf(site *Site, l *Lookup, b *Bound) *rest {
	if site.Tool == l.Tool || strings.ContainsAny(site.Tool, "]\"") {
		return nil
	}
	want := make(map[string]string, len(b.Args))
	fan := false
	for name, e := range b.Args {
		t := e.String()
		switch {
		case t == "$result" || strings.HasPrefix(t, "$result.") || strings.HasPrefix(t, "$result["):
			if e.FanOut() {
				if !strings.Contains(t, "[*]") {
					return nil // a fan-out over what the customer said is precise already
				}
				fan = true
			}
			t = "$last[" + site.Tool + "]" + t[len("$result"):]
		case strings.HasPrefix(t, "$"), strings.HasPrefix(t, "["):
			return nil // reads the site otherwise ($text, $args, $lines), or more than it
		}
		want[name] = t
	}
	if !fan {
		return nil
	}
	bs := f.site(l.Tool, false)
	if bs == nil {
		return nil
	}
	for li := range bs.Lookups {
		rl := &bs.Lookups[li]
		if rl.Tool != l.Tool {
			continue
		}
		for bi := range rl.Bindings {
			if maps.Equal(rl.Bindings[bi].argText(), want) {
				return &rest{site: bs, lookup: rl, bi: bi}
			}
		}
	}
	return nil
}

// restFor is restOf, found once per session.
func (s *Session) restFor(site *Site, l *Lookup, b *Bound) *rest {
	if r, ok := s.rests[b]; ok {
		return r
	}
	r := s.f.restOf(site, l, b)
	if s.rests == nil {
		s.rests = map[*Bound]*rest{}
	}
	s.rests[b] = r
	return r
}

// defers reports whether the fan-out of lookup l by its binding at index
// bi at site waits for the agent's first read of one element (r, its
// rest): in the served fold, the later site acts and is seen min_support
// times, the rest is the binding of most value of its lookup there (the
// one it serves), the decider would take it there (scored by the counts:
// its predicate, which reads that site's result, left out), and its
// held-out hit rate is known, clears the threshold (scaled by its cost)
// and beats the fan-out's own at site. A flow without held-out rates of
// the rest (learn's fit counts them, Options.Rest) never defers.
func (s *Session) defers(r *rest, site *Site, l *Lookup, bi int) bool {
	f, t := s.fold, s.opt.Rule.Threshold
	n := r.site.Count.For(f)
	reach := r.lookup.Reach.For(f)
	if !r.site.acts() || n < max(s.f.MinSupport, 1) || reach == 0 {
		return false
	}
	rb := &r.lookup.Bindings[r.bi]
	if rb.Support(f) < s.f.MinSupport {
		return false
	}
	mb := r.lookup.MeanBytes(f)
	scale := max(1, mb/DetourBytes)
	v := rb.Value(f, t, scale)
	for i := range r.lookup.Bindings {
		o := &r.lookup.Bindings[i]
		if i == r.bi || o.Support(f) < s.f.MinSupport {
			continue
		}
		if w := o.Value(f, t, scale); w > v || w == v && i < r.bi {
			return false
		}
	}
	pr := s.heldOutRate(r.site, r.lookup.Tool, r.bi, false)
	if math.IsNaN(pr) || pr < t*scale {
		return false
	}
	if pa := s.heldOutRate(site, l.Tool, bi, false); !math.IsNaN(pa) && pr <= pa {
		return false
	}
	o := Offer{Tool: r.lookup.Tool, Binding: s.bindingText(rb), From: r.site.Tool,
		PReach: float64(reach) / float64(n), PHabit: float64(r.lookup.Habit.For(f)) / float64(n), PBinding: rb.PBinding(f, reach)}
	if a := s.f.Arbiter; a != nil {
		o.PArbiter = a.P(InputsOf(&o), f)
	}
	if mb > DetourBytes {
		o.Cost = mb / DetourBytes
	}
	_ = o
	return true
}

// isRest reports whether the binding at index bi of lookup l at site is
// the rest of a fan-out at the site of the tool whose latest result it
// reads ($last[tool]…[*]), found once per session.
func (s *Session) isRest(site *Site, l *Lookup, bi int) bool {
	b := &l.Bindings[bi]
	if v, ok := s.restOfs[b]; ok {
		return v
	}
	is := false
	for _, e := range b.Args {
		t := e.String()
		if !e.FanOut() || !strings.HasPrefix(t, "$last[") {
			continue
		}
		end := strings.IndexByte(t, ']')
		a := s.f.site(t[len("$last["):end], false)
		if a == nil {
			break
		}
		for li := range a.Lookups {
			if a.Lookups[li].Tool != l.Tool {
				continue
			}
			for ai := range a.Lookups[li].Bindings {
				if r := s.f.restOf(a, &a.Lookups[li], &a.Lookups[li].Bindings[ai]); r != nil && r.site == site && r.bi == bi {
					is = true
				}
			}
		}
		break
	}
	if s.restOfs == nil {
		s.restOfs = map[*Bound]bool{}
	}
	s.restOfs[b] = is
	return is
}

// countRests tells Options.Rest the offers each rest binding of the site
// would make had its fan-out waited for this read: the elements the agent
// has not asked for itself since its last write, each once since then.
// The session's course is not changed: its own lookups are left out of
// what was asked, as if the fan-out had not been made.
func (s *Session) countRests(site *Site) {
	for li := range site.Lookups {
		l := &site.Lookups[li]
		for bi := range l.Bindings {
			if !s.isRest(site, l, bi) {
				continue
			}
			b := &l.Bindings[bi]
			objs, ok := binding.Bind(s.argNames(b), b.Args, &s.scope, s.opt.Caps.PerCall)
			if !ok {
				continue
			}
			o := Offer{Tool: l.Tool, Binding: s.bindingText(b), From: site.Tool}
			for _, args := range objs {
				o.Args = args
				lb := o.Label()
				if s.agentAsked[lb] || s.restSeen[lb] {
					continue
				}
				s.restSeen[lb] = true
				s.opt.Rest(&o)
			}
		}
	}
}
