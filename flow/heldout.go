package flow

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hoist-mcp/hoist/binding"
)

// HeldOut is what the arbiter's held-out replay saw of the offers of one
// binding of a lookup (learn.FitArbiter): every offer of it once per run,
// with whether the agent made that call itself before its next write; in
// total and by the model that drove the agent (episode.AgentModel). Counts
// are by the fold of the replayed episode's task, whose offers were scored
// by counts without it, so served to fold f, Offers.For(f) and
// Hits.For(f) are the hit rate other folds' tasks saw: a cross-fold
// estimate, not a fit.
//
// It is a gate beside the decider: an offer whose binding's held-out hit
// rate, for this agent backed off to every agent's (Rate), is below the
// rule's threshold (scaled by its cost) is not made. A lookup's bindings
// hit at rates of their own (the element the customer named more often
// than every element), and so may agents: one checks every reservation a
// fan-out looks up, another one or two.
type HeldOut struct {
	// Site and Failed are the site, Lookup the lookup's tool, Binding the
	// index of the binding in the lookup's bindings, and Narrowed whether
	// the offers were of its fan-out narrowed to what the customer named
	// (Narrow).
	Site     string `json:"site"`
	Failed   bool   `json:"failed"`
	Lookup   string `json:"lookup"`
	Binding  int    `json:"binding"`
	Narrowed bool   `json:"narrowed,omitempty"`
	Offers   Count  `json:"offers"`
	Hits     Count  `json:"hits"`
	// Agents are the same counts by agent model, for the models the
	// replay saw; an episode of no known model counts in the total only.
	Agents map[string]AgentCounts `json:"agents,omitempty"`
}

// HeldOutKey is what a HeldOut counts the offers of.
type HeldOutKey struct {
	Site     string
	Failed   bool
	Lookup   string
	Binding  int
	Narrowed bool
}

// Key returns what h counts the offers of.
func (h *HeldOut) Key() HeldOutKey {
	return HeldOutKey{Site: h.Site, Failed: h.Failed, Lookup: h.Lookup, Binding: h.Binding, Narrowed: h.Narrowed}
}

// CompareHeldOut orders held-out counts: by site, failed (false first),
// lookup, binding, then narrowed (false first).
func CompareHeldOut(a, b HeldOutKey) int {
	return cmp.Or(strings.Compare(a.Site, b.Site), compareBool(a.Failed, b.Failed), strings.Compare(a.Lookup, b.Lookup),
		cmp.Compare(a.Binding, b.Binding), compareBool(a.Narrowed, b.Narrowed))
}

// OfferBindings returns, for each binding of f's lookups, the text its
// offers log (OfferBinding), and its narrowed fan-out's, by site tool and
// lookup tool: how learn finds the binding an offer of its replay was of
// (an offer names its site's tool, not whether it failed: a text both
// outcomes' bindings log is the one of the site that did not fail).
func OfferBindings(f *Flow) map[[3]string]HeldOutKey {
	out := map[[3]string]HeldOutKey{}
	put := func(k [3]string, v HeldOutKey) {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	for si := range f.Sites {
		s := &f.Sites[si]
		for li := range s.Lookups {
			l := &s.Lookups[li]
			for bi := range l.Bindings {
				b := &l.Bindings[bi]
				key := HeldOutKey{Site: s.Tool, Failed: s.Failed, Lookup: l.Tool, Binding: bi}
				put([3]string{s.Tool, l.Tool, OfferBinding(b.argText())}, key)
				if b.Narrow == nil {
					continue
				}
				names := make([]string, 0, len(b.Args))
				for k := range b.Args {
					names = append(names, k)
				}
				slices.Sort(names)
				if n, ok := binding.Narrow(names, b.Args); ok {
					text := map[string]string{}
					for k, e := range n {
						text[k] = e.String()
					}
					key.Narrowed = true
					put([3]string{s.Tool, l.Tool, OfferBinding(text)}, key)
				}
			}
		}
	}
	return out
}

// AgentCounts are one agent model's offers and hits.
type AgentCounts struct {
	Offers Count `json:"offers"`
	Hits   Count `json:"hits"`
}

// HeldOutMinOffers is the least held-out offers (in the served fold) a
// lookup needs before its hit rate gates it: fewer say too little.
const HeldOutMinOffers = 10

// HeldOutPrior is the back-off's weight, in offers: an agent's rate is
// its hits and this many offers at every agent's rate, over its offers
// and these, so an agent seen on a few offers is served nearly the pooled
// rate, and one seen on many its own.
const HeldOutPrior = 10

// Rate returns the held-out hit rate of the lookup's offers served to fold
// f for agent (its model; "" for unknown), backed off to every agent's
// rate scaled by factor, how much more often the agent's offers hit than
// every agent's over all lookups (AgentFactor; 1 for none): (hits_a +
// m·q) / (offers_a + m), m = HeldOutPrior, q = min(1, p·factor), where p
// = (hits + ½) / (offers + 1) is every agent's. NaN when the fold has
// fewer than HeldOutMinOffers offers in total: no gate.
func (h *HeldOut) Rate(f int, agent string, factor float64) float64 {
	n := h.Offers.For(f)
	if n < HeldOutMinOffers {
		return math.NaN()
	}
	p := (float64(h.Hits.For(f)) + 0.5) / (float64(n) + 1)
	if agent == "" {
		return p
	}
	q := min(1, p*factor)
	a := h.Agents[agent]
	return (float64(a.Hits.For(f)) + HeldOutPrior*q) / (float64(a.Offers.For(f)) + HeldOutPrior)
}

// AgentFactor returns how much more often agent's held-out offers hit
// than every agent's, over every lookup, in fold f: the ratio of the two
// rates, each smoothed by a half on each side; 1 for an agent not seen.
func AgentFactor(hs []HeldOut, f int, agent string) float64 {
	var n, k, na, ka int
	for i := range hs {
		n += hs[i].Offers.For(f)
		k += hs[i].Hits.For(f)
		if a, ok := hs[i].Agents[agent]; ok {
			na += a.Offers.For(f)
			ka += a.Hits.For(f)
		}
	}
	if agent == "" || na == 0 {
		return 1
	}
	return ((float64(ka) + 0.5) / (float64(na) + 1)) / ((float64(k) + 0.5) / (float64(n) + 1))
}

// validate checks the counts: hits within offers, an agent's within the
// total.
func (h *HeldOut) validate(field string, check func(string, Count, int) error) error {
	if h.Site == "" || h.Lookup == "" || h.Binding < 0 {
		return &FieldError{Field: field, Err: fmt.Errorf("want a site, a lookup and a binding's index")}
	}
	if err := check(field+".offers", h.Offers, 1<<40); err != nil {
		return err
	}
	if err := check(field+".hits", h.Hits, h.Offers.N); err != nil {
		return err
	}
	names := make([]string, 0, len(h.Agents))
	for name := range h.Agents {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		a := h.Agents[name]
		af := fmt.Sprintf("%s.agents[%q]", field, name)
		if name == "" {
			return &FieldError{Field: af, Err: fmt.Errorf("an agent without a name: its offers count in the total only")}
		}
		if err := check(af+".offers", a.Offers, h.Offers.N); err != nil {
			return err
		}
		if err := check(af+".hits", a.Hits, a.Offers.N); err != nil {
			return err
		}
	}
	return nil
}

// gated reports whether the held-out hit rate of the offers of lookup by
// its binding at index bi (narrowed or not) at site, for the session's
// agent, times lift, is below threshold t: then they are not made. lift
// is 1, or for a lookup with a predicate P(reach | the predicate's outcome
// at this site) / P(reach): the rate counts the offers of both outcomes
// together, and a binding's offers hit about as much more often where its
// lookup is made more often (the one-stop search after a direct search
// that found nothing, not after one that found flights).
func (s *Session) gated(site *Site, lookup string, bi int, narrowed bool, lift, t float64) bool {
	p := s.heldOutRate(site, lookup, bi, narrowed)
	return !math.IsNaN(p) && min(1, p*lift) < t
}

// heldOutRate returns the held-out hit rate of the offers of lookup by its
// binding at index bi (narrowed or not) at site, for the session's agent,
// in the served fold (HeldOut.Rate); NaN when the flow has none or too few.
func (s *Session) heldOutRate(site *Site, lookup string, bi int, narrowed bool) float64 {
	a := s.f.Arbiter
	if a == nil || len(a.HeldOut) == 0 {
		return math.NaN()
	}
	key := HeldOutKey{Site: site.Tool, Failed: site.Failed, Lookup: lookup, Binding: bi, Narrowed: narrowed}
	i, ok := slices.BinarySearchFunc(a.HeldOut, key, func(h HeldOut, k HeldOutKey) int { return CompareHeldOut(h.Key(), k) })
	if !ok {
		return math.NaN()
	}
	if s.agentFactor == 0 {
		s.agentFactor = AgentFactor(a.HeldOut, s.fold, s.opt.Agent)
	}
	return a.HeldOut[i].Rate(s.fold, s.opt.Agent, s.agentFactor)
}

// OfferBinding is an offer's binding as held-out counts key it: each
// argument's expression as the flow log writes it, name=expression, sorted
// by name and joined by ", ".
func OfferBinding(args map[string]string) string {
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	for i, k := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(args[k])
	}
	return b.String()
}
