package evaluate

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/jsontext"
)

// Reward is how a decision is scored from what the agent then did (issue 6,
// point 4; docs/evaluate.md, "What is estimated").
//
// Stop earns 0. A lookup taken at the site of the agent's call c is a hit
// when the agent itself made the same call (same tool on the same server,
// arguments equal as JSON values) after c and before its next write (a call
// of a tool the server lists as a write); it then earns 1/k, where k is the
// number of calls the agent made in the LLM turn of that matching call: a
// turn of k calls is one LLM turn, so a turn all of whose calls were looked
// up earns exactly 1, one turn saved. A lookup that is not a hit is a detour
// and earns −DetourCost: the threshold's meaning, the cost of a detour in
// saved turns.
//
// The matching call is looked for among the agent's calls, so the reward is
// exact in shadow mode (--flow-shadow: the agent never sees the lookups) and
// with a scripted agent; an agent that trusts the looked-up results and
// skips the call makes a hit look like a detour, so estimates from active
// sessions are pessimistic.
type Reward struct {
	DetourCost float64
}

// step is one logged decision, ready to be weighed.
type step struct {
	offers []flow.Offer
	logged flow.Rule
	taken  int       // index into offers, len(offers) for stop
	p      float64   // logged propensity of the taken action
	pb     []float64 // the logged rule's probability of each action
	r      float64   // reward of the taken action
	// hit and credit say whether the taken lookup was a hit and what it
	// earned; only the taken action's outcome is used (bandit feedback).
	hit    bool
	credit float64
	q      []float64 // q̂ of each action (stop: 0), filled by the model
}

// run is one logged run, ready to be weighed.
type run struct {
	steps []step
}

// unit is one session: the bootstrap's sampling unit.
type unit struct {
	runs []run
	fold int
}

// prepared is the data of an evaluation: units and what could not be used.
type prepared struct {
	units     []unit
	sessions  int
	runs      int
	decisions int
	// unusable counts decisions in runs that could not be scored: their
	// site call is not in the episode, or a propensity is not in (0, 1].
	unusable int
	// mismatch counts decisions whose logged propensity differs from the
	// logged rule's recomputed one by more than 1e-9 (docs/ope.md §6, 5).
	mismatch int
	lookups  int // lookups taken
	hits     int
	shadow   int // decisions made in shadow
	rules    map[flow.Rule]int
}

// siteCalls returns, for each server index, the agent's calls of that
// server in the order their results arrived: the order the proxy ran the
// flow in.
func siteCalls(e *episode.Episode) map[string][]*episode.Call {
	calls := e.Calls()
	out := map[string][]*episode.Call{}
	for i := range e.Events {
		r := e.Events[i].Result
		if r == nil || r.CallIndex < 0 || r.CallIndex >= len(calls) {
			continue
		}
		c := calls[r.CallIndex]
		if c.By != episode.Agent {
			continue
		}
		out[c.Server] = append(out[c.Server], c)
	}
	return out
}

func bare(tool string) string {
	if i := strings.LastIndex(tool, "::"); i >= 0 {
		return tool[i+2:]
	}
	return tool
}

// canonJSON returns args as compact JSON with sorted members, so that equal
// values compare equal whatever their spelling.
func canonJSON(args json.RawMessage) string {
	if len(args) == 0 || string(args) == "null" {
		return "{}"
	}
	if c, ok := jsontext.CanonicalText(args); ok {
		return c // numbers keep their digits, as in a lookup's label
	}
	return string(args)
}

// episodeIndex answers "did the agent make this call after c, before its
// next write" for one episode.
type episodeIndex struct {
	e     *episode.Episode
	calls []*episode.Call
	canon []string
	write []bool
}

func newEpisodeIndex(e *episode.Episode) *episodeIndex {
	x := &episodeIndex{e: e, calls: e.Calls()}
	x.canon = make([]string, len(x.calls))
	x.write = make([]bool, len(x.calls))
	kinds := map[string]episode.Kind{}
	for _, t := range e.Tools {
		kinds[t.Name] = t.Kind
	}
	for i, c := range x.calls {
		x.write[i] = kinds[c.Tool] == episode.Write
	}
	return x
}

// hit reports whether the agent made o after call c and before its next
// write, and the credit of the matching call: 1/k for a turn of k calls.
func (x *episodeIndex) hit(c *episode.Call, o *flow.Offer) (bool, float64) {
	tool := bare(o.Tool)
	var want string
	for i := c.Index + 1; i < len(x.calls); i++ {
		m := x.calls[i]
		if m.By != episode.Agent || m.Server != c.Server {
			continue
		}
		if x.write[i] {
			return false, 0
		}
		if bare(m.Tool) != tool {
			continue
		}
		if want == "" {
			want = canonJSON(o.Args)
		}
		if x.canon[i] == "" {
			x.canon[i] = canonJSON(m.Args)
		}
		if x.canon[i] != want {
			continue
		}
		k := 1
		if m.Turn >= 0 && m.Turn < len(x.e.Turns) {
			k = max(1, len(x.e.Turns[m.Turn].Calls))
		}
		return true, 1 / float64(k)
	}
	return false, 0
}

// prepare scores every logged decision with rw and splits the sessions
// into units (two folds, alternating, for the cross-fitted model).
func prepare(sessions []Session, rw Reward) *prepared {
	pr := &prepared{rules: map[flow.Rule]int{}}
	for si, s := range sessions {
		pr.sessions++
		u := unit{fold: si % 2}
		x := newEpisodeIndex(s.Episode)
		sites := siteCalls(s.Episode)
		next := map[int]int{} // server index → position in its site calls
		for _, lr := range s.Runs {
			pr.runs++
			pr.decisions += len(lr.Decisions)
			for i := range lr.Decisions {
				pr.rules[lr.Decisions[i].Rule]++
				if lr.Decisions[i].Shadow {
					pr.shadow++
				}
			}
			var site *episode.Call
			if lr.Server >= 0 && lr.Server < len(s.Episode.Servers) && lr.Call != "" {
				cs := sites[s.Episode.Servers[lr.Server].Name]
				for j := next[lr.Server]; j < len(cs); j++ {
					if bare(cs[j].Tool) == bare(lr.Call) {
						site = cs[j]
						next[lr.Server] = j + 1
						break
					}
				}
			}
			r, ok := prepareRun(pr, lr, site, x, rw)
			if !ok {
				pr.unusable += len(lr.Decisions)
				continue
			}
			u.runs = append(u.runs, r)
		}
		pr.units = append(pr.units, u)
	}
	return pr
}

func prepareRun(pr *prepared, lr Run, site *episode.Call, x *episodeIndex, rw Reward) (run, bool) {
	if site == nil || len(lr.Decisions) == 0 {
		return run{}, false
	}
	r := run{steps: make([]step, len(lr.Decisions))}
	for i := range lr.Decisions {
		d := &lr.Decisions[i]
		k := len(d.Offers)
		taken := d.Taken
		if taken < 0 {
			taken = k
		}
		if taken > k || !(d.Propensity > 0 && d.Propensity <= 1) {
			return run{}, false
		}
		_, pb := flow.Propensities(d.Rule, d.Offers)
		if math.Abs(pb[taken]-d.Propensity) > 1e-9 {
			pr.mismatch++
		}
		st := step{offers: d.Offers, logged: d.Rule, taken: taken, p: d.Propensity, pb: pb}
		if taken < k {
			st.hit, st.credit = x.hit(site, &d.Offers[taken])
			if st.hit {
				st.r = st.credit
			} else {
				st.r = -rw.DetourCost
			}
		}
		r.steps[i] = st
	}
	for _, st := range r.steps {
		if st.taken < len(st.offers) {
			pr.lookups++
			if st.hit {
				pr.hits++
			}
		}
	}
	return r, true
}
