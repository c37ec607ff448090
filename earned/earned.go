// Package earned says what the lookups a proxy made in a served session
// earned: the one definition every report of a served flow uses (audit,
// the console, evaluate; DESIGN.md, "What a served lookup earned"; issue
// 24).
//
// A served log does not show what the agent would have done without a
// lookup: the agent read the lookup's answer and did not make the call, or
// never needed it. So Of says what the log does show, per lookup:
//
//   - lower bound (Used): the agent demonstrably used the answer: a value
//     that first reached it there, in the lookup's result, appears in the
//     arguments of a later call of the agent's, or in what it said later
//     (an assistant line of the conversation, logged with --context);
//   - upper bound (not Remade): the agent did not make the same call itself
//     after the lookup and before its next write;
//   - estimate: 1 for a lookup used, 0 for one remade, else the probability
//     the decision that took it gave (P, the offer's score under the rule's
//     decider, as the flow log holds it: P(tool) × P(binding matched), or
//     the arbiter's calibrated probability); without a logged decision the
//     midpoint, ½.
//
// Turns saved follow from the same three hit counts by the turn grouping
// learn and the episode's turn inference use: a value that first appeared
// in what a turn returned starts a new turn. So the lookups made after one
// of the agent's results fall into levels (depth 1: bound from the agent's
// result; depth 2: bound from a depth-1 lookup's answer, ...), each level
// the LLM turn the agent would have spent making those calls itself. A
// level is saved when one of its lookups is a hit, unless the agent's next
// turn holds a read of one of the level's tools bound from the level's
// source (the agent still spent that turn: it made a call of that level
// the flow had not looked up). Lower bound: a turn for each level with a
// hit by the lower bound (a level's calls need the answers of the level
// before, so an agent spends a turn on each). Estimate: a turn for each
// level with probability 1 − Π(1 − eᵢ) over its lookups' estimates, for
// an agent that makes a level's calls together. Upper bound: a turn for
// each lookup that is a hit by the upper bound (an agent may make its
// calls one turn each, as τ²-bench's agents often do).
//
// Unserved and shadow sessions hold no lookup of the proxy's: for them
// every report keeps the counterfactual walk (audit.Walk, flow.ReplayEpisode).
//
// earned is pure: it reads an episode and its flow log's decisions through
// the existing types, never the store.
package earned

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/jsontext"
)

// Served reports whether ep holds a lookup the proxy made on its own: a
// session served a flow (not a shadow, which only logs its decisions).
func Served(ep *episode.Episode) bool {
	for i := range ep.Events {
		if c := ep.Events[i].Call; c != nil && c.By == episode.Proxy {
			return true
		}
	}
	return false
}

// Bounds are a count's lower bound, estimate and upper bound (Lo ≤ Est ≤ Hi).
type Bounds struct {
	Lo  float64 `json:"lo"`
	Est float64 `json:"estimate"`
	Hi  float64 `json:"hi"`
}

// Add adds o to b.
func (b *Bounds) Add(o Bounds) {
	b.Lo += o.Lo
	b.Est += o.Est
	b.Hi += o.Hi
}

// Lookup is what one of the proxy's lookups earned.
type Lookup struct {
	// Call is the lookup's index among the episode's calls; Tool and
	// Server its call's.
	Call   int
	Tool   string
	Server string
	// After is the agent's call whose result the lookup's run followed;
	// From the site that offered it: the tool whose result was read (the
	// flow's name, as a flow log writes it). Depth is its level: 1 when
	// bound from the agent's result, n+1 when bound from a depth-n
	// lookup's answer.
	After int
	From  string
	Depth int
	// Used says the agent demonstrably used its answer (the lower bound);
	// Remade that the agent made the same call itself before its next
	// write (so it was no hit: the upper bound).
	Used, Remade bool
	// P is the probability of a hit the decision that took it gave, when
	// Logged (a decision of the flow log matched it); else ½.
	P      float64
	Logged bool
	// Decision is the index, among the decisions Of was given, of the
	// decision that took it; -1 when none matched.
	Decision int
	// Hit is the lookup's hits (0 or 1 at each bound, the estimate
	// between); Saved its share of the LLM turns its level saved.
	Hit   Bounds
	Saved Bounds
}

// Verdict names a lookup's verdict for a page's badge: "used" (a hit by
// the lower bound), "remade" (a detour by the upper bound) or "unproven"
// (between: a hit only by the estimate's P).
func (l *Lookup) Verdict() string {
	switch {
	case l.Used && !l.Remade:
		return "used"
	case l.Remade:
		return "remade"
	}
	return "unproven"
}

// Earned is what a served session's lookups earned.
type Earned struct {
	Lookups []Lookup
	// Hits and Saved (LLM turns) sum the lookups'.
	Hits  Bounds
	Saved Bounds
	// Turns are the agent's LLM turns with a call of its own, as served.
	Turns int
}

// ByCall returns the lookups by call index.
func (e *Earned) ByCall() map[int]*Lookup {
	out := make(map[int]*Lookup, len(e.Lookups))
	for i := range e.Lookups {
		out[e.Lookups[i].Call] = &e.Lookups[i]
	}
	return out
}

// minValue is the shortest value that counts as evidence of use: shorter
// ones ("1", "no") appear anywhere by chance.
const minValue = 3

// Of returns what the proxy's lookups in ep earned, given the decisions of
// its flow log in log order (nil when it has none). Decisions are matched
// to lookups by tool and arguments, in order; a shadow decision makes no
// lookup and matches none.
func Of(ep *episode.Episode, decisions []flow.Decision) *Earned {
	calls := ep.Calls()
	kinds := map[string]episode.Kind{}
	for _, t := range ep.Tools {
		kinds[t.Name] = t.Kind
	}
	out := &Earned{}
	for _, t := range ep.Turns {
		if len(t.AgentCalls(calls)) > 0 {
			out.Turns++
		}
	}
	// The decisions' probabilities, by the label of the call they took.
	logged := map[string][]float64{}
	from := map[string][]string{}
	which := map[string][]int{}
	for i := range decisions {
		d := &decisions[i]
		o := d.TakenOffer()
		if o == nil || d.Shadow {
			continue
		}
		lb := flow.CallLabel(o.Tool, o.Args)
		logged[lb] = append(logged[lb], min(1, max(0, o.Score(d.Rule.Decider))))
		from[lb] = append(from[lb], o.From)
		which[lb] = append(which[lb], i)
	}

	// Where each value first appeared: the timeline of what was said,
	// passed by the agent and returned, each item with the call whose
	// result it is (-1 for the others). The proxy's arguments are left
	// out: they are bound from results already there.
	var tl timeline
	resultAt := make([]int, len(calls)) // each call's result item, or -1
	for i := range resultAt {
		resultAt[i] = -1
	}
	eventItem := make([]int, len(ep.Events)) // the items before each event
	for pos, ev := range ep.Events {
		eventItem[pos] = len(tl.items)
		switch {
		case ev.Type == episode.EventMessage && ev.Message != nil:
			tl.add(ev.Message.Text, -1)
		case ev.Type == episode.EventCall && ev.Call != nil && ev.Call.By != episode.Proxy:
			tl.add(string(ev.Call.Args), -1)
		case ev.Type == episode.EventResult && ev.Result != nil:
			ci := ev.Result.CallIndex
			if ci >= 0 && ci < len(calls) {
				resultAt[ci] = len(tl.items)
			}
			tl.add(ev.Result.Text, ci)
		}
	}
	// owner returns the call in whose result v first appeared before
	// event pos, or -1.
	owner := func(v string, pos int) int {
		it := tl.first(v)
		if it < 0 || it >= eventItem[pos] {
			return -1
		}
		return tl.items[it].call
	}

	// The lookups, each after the agent's call whose result came last.
	index := map[int]int{} // call index → position in out.Lookups
	posOf := make([]int, len(calls))
	after := -1
	for pos, ev := range ep.Events {
		switch {
		case ev.Type == episode.EventCall && ev.Call != nil:
			posOf[ev.Call.Index] = pos
			if ev.Call.By != episode.Proxy {
				continue
			}
			c := ev.Call
			lk := Lookup{Call: c.Index, Tool: c.Tool, Server: c.Server, After: after, Depth: 1, P: 0.5, Decision: -1}
			src := after
			for _, v := range episode.ArgValues(c.Args) {
				o := owner(v, pos)
				if j, ok := index[o]; ok && out.Lookups[j].After == after && out.Lookups[j].Depth+1 > lk.Depth {
					lk.Depth, src = out.Lookups[j].Depth+1, o
				}
			}
			if src >= 0 && src < len(calls) {
				lk.From = bareName(calls[src].Tool, calls[src].Server)
			}
			lb := flow.CallLabel(bareName(c.Tool, c.Server), c.Args)
			if ps := logged[lb]; len(ps) > 0 {
				lk.P, lk.Logged, lk.From, lk.Decision = ps[0], true, from[lb][0], which[lb][0]
				logged[lb], from[lb], which[lb] = ps[1:], from[lb][1:], which[lb][1:]
			}
			index[c.Index] = len(out.Lookups)
			out.Lookups = append(out.Lookups, lk)
		case ev.Type == episode.EventResult && ev.Result != nil:
			ci := ev.Result.CallIndex
			if ci >= 0 && ci < len(calls) && calls[ci].By != episode.Proxy {
				after = ci
			}
		}
	}
	if len(out.Lookups) == 0 {
		return out
	}

	// Used: a value first returned by a lookup in a later call of the
	// agent's, or in what it said later.
	for pos, ev := range ep.Events {
		var values []string
		switch {
		case ev.Type == episode.EventCall && ev.Call != nil && ev.Call.By != episode.Proxy:
			values = episode.ArgValues(ev.Call.Args)
		case ev.Type == episode.EventMessage && ev.Message != nil && ev.Message.Role == "assistant":
			values = said(ev.Message.Text, out.Lookups, calls, resultAt, &tl)
		}
		for _, v := range values {
			if len(v) < minValue {
				continue
			}
			if j, ok := index[owner(v, pos)]; ok {
				out.Lookups[j].Used = true
			}
		}
	}
	// Remade: the agent made the same call after it, before its next write.
	for i := range out.Lookups {
		lk := &out.Lookups[i]
		lb := flow.CallLabel(lk.Tool, calls[lk.Call].Args)
		for _, ev := range ep.Events[posOf[lk.Call]+1:] {
			c := ev.Call
			if ev.Type != episode.EventCall || c == nil || c.By == episode.Proxy {
				continue
			}
			if flow.CallLabel(c.Tool, c.Args) == lb {
				lk.Remade = true
				break
			}
			if kinds[c.Tool] == episode.Write {
				break
			}
		}
		switch {
		case lk.Remade:
			lk.Hit = Bounds{}
		case lk.Used:
			lk.Hit = Bounds{1, 1, 1}
		default:
			lk.Hit = Bounds{0, lk.P, 1}
		}
		out.Hits.Add(lk.Hit)
	}

	// Turns saved, by level of each run.
	type level struct{ after, depth int }
	levels := map[level][]int{}
	var order []level
	for i, lk := range out.Lookups {
		k := level{lk.After, lk.Depth}
		if levels[k] == nil {
			order = append(order, k)
		}
		levels[k] = append(levels[k], i)
	}
	levelTools := map[level]map[string]bool{}
	for k, is := range levels {
		levelTools[k] = map[string]bool{}
		for _, i := range is {
			levelTools[k][out.Lookups[i].Tool] = true
		}
	}
	blocked := map[level]bool{}
	for _, k := range order {
		if k.after < 0 || k.after >= len(calls) {
			continue
		}
		// The agent's next turn after the run.
		last := 0
		for _, i := range levels[k] {
			last = max(last, posOf[out.Lookups[i].Call])
		}
		turn := calls[k.after].Turn
		next := -1
		for _, ev := range ep.Events[last+1:] {
			if c := ev.Call; ev.Type == episode.EventCall && c != nil && c.By != episode.Proxy && c.Turn != turn {
				next = c.Turn
				break
			}
		}
		if next < 0 || next >= len(ep.Turns) {
			continue
		}
		for _, ci := range ep.Turns[next].Calls {
			c := calls[ci]
			if c.By == episode.Proxy || kinds[c.Tool] == episode.Write {
				continue
			}
			for _, v := range episode.ArgValues(c.Args) {
				o := owner(v, posOf[ci])
				d := 0
				switch {
				case o == k.after:
					d = 1
				case o >= 0:
					if j, ok := index[o]; ok && out.Lookups[j].After == k.after {
						d = out.Lookups[j].Depth + 1
					}
				}
				// Only a call of a tool the level looked up is one of its
				// calls the flow missed; another read bound from the same
				// source is a turn of its own.
				if lv := (level{k.after, d}); d > 0 && levelTools[lv][c.Tool] {
					blocked[lv] = true
				}
			}
		}
	}
	for _, k := range order {
		if blocked[k] {
			continue
		}
		var lv Bounds
		miss := 1.0
		for _, i := range levels[k] {
			h := out.Lookups[i].Hit
			lv.Lo = max(lv.Lo, h.Lo)
			lv.Hi += h.Hi // an agent may make a level's calls one turn each
			miss *= 1 - h.Est
		}
		lv.Est = 1 - miss
		out.Saved.Add(lv)
		share := 1 / float64(len(levels[k]))
		for _, i := range levels[k] {
			out.Lookups[i].Saved = Bounds{lv.Lo * share, lv.Est * share, lv.Hi * share}
		}
	}
	return out
}

// said returns the values of the lookups' answers an assistant line holds.
func said(text string, lks []Lookup, calls []*episode.Call, resultAt []int, tl *timeline) []string {
	var out []string
	for _, lk := range lks {
		r := calls[lk.Call].Result
		if r == nil || resultAt[lk.Call] < 0 {
			continue
		}
		for _, v := range leaves(r.Text) {
			if len(v) >= minValue && strings.Contains(text, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// leaves returns the strings and numbers of a JSON text, or nothing when
// it is not JSON.
func leaves(text string) []string {
	if _, ok := jsontext.Parse([]byte(text)); !ok {
		return nil
	}
	return episode.ArgValues(json.RawMessage(text))
}

func bareName(tool, server string) string {
	if server == "" {
		return tool
	}
	return strings.TrimPrefix(tool, server+"::")
}

// timeline is the episode's text, item after item, with the call whose
// result each item is.
type timeline struct {
	buf   strings.Builder
	items []item
	memo  map[string]int
}

type item struct {
	end  int
	call int
}

func (t *timeline) add(s string, call int) {
	t.buf.WriteString(s)
	t.buf.WriteByte(0) // no value spans two items
	t.items = append(t.items, item{end: t.buf.Len(), call: call})
}

// first returns the item where v first appears, or -1.
func (t *timeline) first(v string) int {
	if t.memo == nil {
		t.memo = map[string]int{}
	}
	if it, ok := t.memo[v]; ok {
		return it
	}
	it := -1
	if at := strings.Index(t.buf.String(), v); at >= 0 && v != "" {
		lo, hi := 0, len(t.items)
		for lo < hi {
			m := (lo + hi) / 2
			if t.items[m].end > at {
				hi = m
			} else {
				lo = m + 1
			}
		}
		it = lo
	}
	t.memo[v] = it
	return it
}

// Round returns x rounded to the nearest count, for a report that prints
// whole lookups.
func Round(x float64) int { return int(math.Round(x)) }
