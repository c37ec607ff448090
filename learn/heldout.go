package learn

import (
	"cmp"
	"slices"
	"strings"

	"github.com/hoist-mcp/hoist/flow"
)

// A lookup's held-out hit rate (flow.HeldOut) is counted in the arbiter's
// replay, beside its table: each offer once per run, by the site that
// offered it, the lookup's tool, the model that drove the agent and the
// fold of the replayed task. Rates of shards' tables add up as their rows
// do, so a sharded learn gates the same lookups.

// rateKey is one cell of the held-out rates. A site is its tool: an offer
// does not say whether its site's call failed, so both outcomes of a tool
// share their lookups' rates.
type rateKey struct {
	site, lookup, binding, agent string
	fold                         int
}

// rateAcc is a cell's offers and hits.
type rateAcc struct{ offers, hits int }

func (t *Table) addRate(k rateKey, hit bool) {
	h := 0
	if hit {
		h = 1
	}
	t.addRateN(k, 1, h)
}

func (t *Table) addRateN(k rateKey, offers, hits int) {
	if t.rates == nil {
		t.rates = map[rateKey]*rateAcc{}
	}
	r := t.rates[k]
	if r == nil {
		r = &rateAcc{}
		t.rates[k] = r
	}
	r.offers += offers
	r.hits += hits
}

// sortedRates returns the cells in a fixed order.
func (t *Table) sortedRates() []rateKey {
	keys := make([]rateKey, 0, len(t.rates))
	for k := range t.rates {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b rateKey) int {
		return cmp.Or(strings.Compare(a.site, b.site), strings.Compare(a.lookup, b.lookup), strings.Compare(a.binding, b.binding),
			strings.Compare(a.agent, b.agent), cmp.Compare(a.fold, b.fold))
	})
	return keys
}

// heldOut writes the table's rates into f's arbiter, by the binding each
// offer was of (flow.OfferBindings), sorted. An offer of no binding of f
// (a table of another flow) is left out.
func (t *Table) heldOut(f *flow.Flow) {
	k := f.Folds
	of := flow.OfferBindings(f)
	byKey := map[flow.HeldOutKey]*flow.HeldOut{}
	for _, key := range t.sortedRates() {
		r := t.rates[key]
		hk, ok := of[[3]string{key.site, key.lookup, key.binding}]
		if !ok {
			continue
		}
		h := byKey[hk]
		if h == nil {
			h = &flow.HeldOut{Site: hk.Site, Failed: hk.Failed, Lookup: hk.Lookup, Binding: hk.Binding, Narrowed: hk.Narrowed, Offers: flow.NewCount(k), Hits: flow.NewCount(k)}
			byKey[hk] = h
		}
		h.Offers.AddN(key.fold, r.offers)
		h.Hits.AddN(key.fold, r.hits)
		if key.agent == "" {
			continue
		}
		if h.Agents == nil {
			h.Agents = map[string]flow.AgentCounts{}
		}
		a, ok := h.Agents[key.agent]
		if !ok {
			a = flow.AgentCounts{Offers: flow.NewCount(k), Hits: flow.NewCount(k)}
		}
		a.Offers.AddN(key.fold, r.offers)
		a.Hits.AddN(key.fold, r.hits)
		h.Agents[key.agent] = a
	}
	out := make([]flow.HeldOut, 0, len(byKey))
	for _, h := range byKey {
		out = append(out, *h)
	}
	slices.SortFunc(out, func(a, b flow.HeldOut) int { return flow.CompareHeldOut(a.Key(), b.Key()) })
	if len(out) == 0 {
		out = nil
	}
	f.Arbiter.HeldOut = out
}
