package evaluate

import (
	"cmp"
	"encoding/json"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"github.com/hoist-mcp/hoist/earned"
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
// number of calls the agent made in the LLM turn of that matching call
// (the proxy's own lookups in that turn do not count: issue 18, point 2): a
// turn of k calls is one LLM turn, so a turn all of whose calls were
// looked up earns exactly 1, one turn saved. A lookup that is not a hit is
// a detour and earns −DetourCost: the threshold's meaning, the cost of a
// detour in saved turns.
//
// The matching call is looked for among the agent's calls, so in shadow
// mode (--flow-shadow: the agent never sees the lookups) a hit is a lookup
// that would have saved the call. Served, the proxy's lookup is in the
// episode and an agent that used its answer skipped the call, so the
// lookup earns what package earned says it earned (audit's figure):
// saved − (1 − hit)·DetourCost, with hit and saved earned's estimates for
// it (its share of the turns its level saved), between their bounds.
// docs/evaluate.md says which to log.
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
	// rLo and rHi bound r: equal to it, but for a served lookup, whose
	// reward is earned's estimate between its bounds.
	rLo, rHi float64
	// h and credit say how much of a hit the taken lookup was (0 or 1,
	// or for a served lookup earned's estimate between) and the turns its
	// hit saved (1/k, or earned's share of its level's turns); only the
	// taken action's outcome is used (bandit feedback). served says the
	// reward is earned's.
	h      float64
	credit float64
	served bool
	// hitB and savedB are h and credit with their bounds (earned's for a
	// served lookup; else both bounds equal them).
	hitB, savedB earned.Bounds
	// settle is the index, among the session's decisions in the order they
	// were made, of the last decision made before this one's reward was
	// settled: its own index when nothing decided later can change it.
	settle int
	q      []float64 // q̂ of each action (stop: 0), filled by the model
}

// run is one logged run, ready to be weighed.
type run struct {
	steps []step
	// first is the index of its first decision among the session's.
	first int
	// at is the position, in the episode's events, of the result of the
	// agent's call the run followed: runs are made in that order.
	at         int
	tool       string
	failed     bool
	shadow     bool
	maxLookups int
}

// unit is one session: the bootstrap's sampling unit. Its runs are in the
// order they were made, and its decisions numbered in that order.
type unit struct {
	id    string
	runs  []run
	steps int
	fold  int
}

// prepared is the data of an evaluation: units and what could not be used.
type prepared struct {
	units     []unit
	sessions  int
	runs      int
	decisions int
	// unusable counts the decisions of sessions left out because one of
	// their runs could not be scored: its site call is not in the episode,
	// or a propensity is not in (0, 1].
	unusable int
	// mismatch counts decisions whose logged propensity differs from the
	// logged rule's recomputed one by more than 1e-9 (docs/ope.md §6, 5).
	mismatch int
	lookups  int // lookups taken
	hits     float64
	shadow   int // decisions made in shadow
	rules    map[flow.Rule]int
	// served is what the proxy's own lookups earned in served sessions.
	served *ServedLookups
}

// siteCall is one of the agent's calls that returned, and where its
// result is among the episode's events.
type siteCall struct {
	c  *episode.Call
	at int
}

// siteCalls returns, for each server, the agent's calls of that server in
// the order their results arrived: the order the proxy ran the flow in.
func siteCalls(e *episode.Episode, calls []*episode.Call) map[string][]siteCall {
	out := map[string][]siteCall{}
	for i := range e.Events {
		r := e.Events[i].Result
		if r == nil || r.CallIndex < 0 || r.CallIndex >= len(calls) {
			continue
		}
		c := calls[r.CallIndex]
		if c.By != episode.Agent {
			continue
		}
		out[c.Server] = append(out[c.Server], siteCall{c, i})
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
// next write" for one episode, and when that was settled.
type episodeIndex struct {
	e     *episode.Episode
	calls []*episode.Call
	canon []string
	write []bool
	at    []int // each call's position among the events
	// agents counts the agent's calls in each turn; closed is the position
	// of the event that closed each turn (the first call of a later turn),
	// len(Events) for the last.
	agents []int
	closed []int
}

func newEpisodeIndex(e *episode.Episode) *episodeIndex {
	x := &episodeIndex{e: e, calls: e.Calls()}
	x.canon = make([]string, len(x.calls))
	x.write = make([]bool, len(x.calls))
	x.at = make([]int, len(x.calls))
	kinds := map[string]episode.Kind{}
	for _, t := range e.Tools {
		kinds[t.Name] = t.Kind
	}
	for i, c := range x.calls {
		x.write[i] = kinds[c.Tool] == episode.Write
	}
	n := 0
	for i := range e.Events {
		if e.Events[i].Call != nil {
			x.at[n] = i
			n++
		}
	}
	x.agents = make([]int, len(e.Turns))
	x.closed = make([]int, len(e.Turns))
	for i := range x.closed {
		x.closed[i] = len(e.Events)
	}
	for i, c := range x.calls {
		if c.Turn < 0 || c.Turn >= len(e.Turns) {
			continue
		}
		if c.By == episode.Agent {
			x.agents[c.Turn]++
		}
		// Turns are numbered in the order they start, so a call of turn j
		// closes every turn before it that is still open.
		for j := c.Turn - 1; j >= 0 && x.closed[j] == len(e.Events); j-- {
			x.closed[j] = x.at[i]
		}
	}
	return x
}

// hit reports whether the agent made o after call c and before its next
// write, the credit of the matching call (1/k for a turn of k of the
// agent's calls), and the position among the events from which on nothing
// can change that: the next write, or the close of the matching call's
// turn, or the end of the episode.
func (x *episodeIndex) hit(c *episode.Call, o *flow.Offer) (bool, float64, int) {
	tool := bare(o.Tool)
	var want string
	for i := c.Index + 1; i < len(x.calls); i++ {
		m := x.calls[i]
		if m.By != episode.Agent || m.Server != c.Server {
			continue
		}
		if x.write[i] {
			return false, 0, x.at[i]
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
		k, closed := 1, len(x.e.Events)
		if m.Turn >= 0 && m.Turn < len(x.e.Turns) {
			k, closed = max(1, x.agents[m.Turn]), x.closed[m.Turn]
		}
		return true, 1 / float64(k), closed
	}
	return false, 0, len(x.e.Events)
}

// foldOf is the DR model's fold of a session: FNV-1a of its id, modulo 2,
// so that a session's fold does not depend on where the store put it
// (issue 18, point 4).
func foldOf(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() & 1)
}

// tally is what scoring sessions counts beside the units.
type tally struct {
	runs, decisions, unusable, mismatch, lookups, shadow int
	hits                                                 float64
	rules                                                map[flow.Rule]int
}

// prepare scores every logged decision with rw and makes each session a
// unit, in the order of their ids.
func prepare(sessions []Session, rw Reward) *prepared {
	pr := &prepared{rules: map[flow.Rule]int{}}
	type servedOne struct {
		id string
		e  *earned.Earned
	}
	var served []servedOne
	tl := tally{rules: pr.rules}
	for _, s := range sessions {
		pr.sessions++
		if s.Episode != nil && earned.Served(s.Episode) {
			var ds []flow.Decision
			for _, r := range s.Runs {
				ds = append(ds, r.Decisions...)
			}
			served = append(served, servedOne{s.Episode.ID, earned.Of(s.Episode, ds)})
		}
		if u, ok := score(s, rw, &tl); ok && len(u.runs) > 0 {
			pr.units = append(pr.units, u)
		}
	}
	pr.runs, pr.decisions, pr.unusable, pr.mismatch = tl.runs, tl.decisions, tl.unusable, tl.mismatch
	pr.lookups, pr.hits, pr.shadow = tl.lookups, tl.hits, tl.shadow
	// Summed in the order of the sessions' ids: the report does not
	// depend on the order they came in.
	slices.SortStableFunc(served, func(a, b servedOne) int { return strings.Compare(a.id, b.id) })
	for _, x := range served {
		if pr.served == nil {
			pr.served = &ServedLookups{}
		}
		pr.served.Sessions++
		pr.served.Lookups += len(x.e.Lookups)
		pr.served.Hits.Add(x.e.Hits)
		pr.served.Saved.Add(x.e.Saved)
	}
	slices.SortStableFunc(pr.units, func(a, b unit) int { return strings.Compare(a.id, b.id) })
	return pr
}

// score places each run of s after the agent's call it followed, puts the
// runs in the order they were made, and scores each decision with rw. A
// session one of whose runs cannot be scored is left out whole (ok false):
// its decisions' weights would lack that run's.
func score(s Session, rw Reward, tl *tally) (unit, bool) {
	u := unit{fold: -1}
	if s.Episode != nil {
		u.id, u.fold = s.Episode.ID, foldOf(s.Episode.ID)
	}
	n := 0
	for _, lr := range s.Runs {
		tl.runs++
		tl.decisions += len(lr.Decisions)
		n += len(lr.Decisions)
		for i := range lr.Decisions {
			tl.rules[lr.Decisions[i].Rule]++
			if lr.Decisions[i].Shadow {
				tl.shadow++
			}
		}
	}
	if s.Episode == nil {
		tl.unusable += n
		return unit{}, false
	}
	x := newEpisodeIndex(s.Episode)
	// In a served session the proxy's lookups are in the episode: what
	// each earned is earned's, not whether the agent made the call again
	// (an agent that used the answer did not). By the decision that took
	// it, numbered across the runs in log order.
	var byDecision map[int]*earned.Lookup
	if earned.Served(s.Episode) {
		var ds []flow.Decision
		for _, lr := range s.Runs {
			ds = append(ds, lr.Decisions...)
		}
		e := earned.Of(s.Episode, ds)
		byDecision = map[int]*earned.Lookup{}
		for i := range e.Lookups {
			if d := e.Lookups[i].Decision; d >= 0 {
				byDecision[d] = &e.Lookups[i]
			}
		}
	}
	offset := make([]int, len(s.Runs)) // each run's first decision, in log order
	for ri := 1; ri < len(s.Runs); ri++ {
		offset[ri] = offset[ri-1] + len(s.Runs[ri-1].Decisions)
	}
	sites := siteCalls(s.Episode, x.calls)
	next := map[int]int{} // server index → position in its site calls
	placed := make([]*episode.Call, len(s.Runs))
	for ri, lr := range s.Runs {
		if lr.Server < 0 || lr.Server >= len(s.Episode.Servers) || lr.Call == "" || len(lr.Decisions) == 0 {
			tl.unusable += n
			return unit{}, false
		}
		cs := sites[s.Episode.Servers[lr.Server].Name]
		for j := next[lr.Server]; j < len(cs); j++ {
			if bare(cs[j].c.Tool) == bare(lr.Call) {
				placed[ri] = cs[j].c
				u.runs = append(u.runs, run{at: cs[j].at, tool: lr.Call, failed: lr.Failed, maxLookups: lr.MaxLookups})
				next[lr.Server] = j + 1
				break
			}
		}
		if placed[ri] == nil {
			tl.unusable += n
			return unit{}, false
		}
	}
	// The runs in the order they were made: by their calls' results (each
	// server's runs are in that order already).
	order := make([]int, len(s.Runs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(u.runs[a].at, u.runs[b].at) })
	runs := make([]run, len(order))
	mismatch := 0
	first := 0
	for k, ri := range order {
		r := u.runs[ri]
		r.first = first
		r.shadow = true
		lr := s.Runs[ri]
		r.steps = make([]step, len(lr.Decisions))
		for i := range lr.Decisions {
			d := &lr.Decisions[i]
			nOffers := len(d.Offers)
			taken := d.Taken
			if taken < 0 {
				taken = nOffers
			}
			if taken > nOffers || !(d.Propensity > 0 && d.Propensity <= 1) {
				tl.unusable += n
				return unit{}, false
			}
			_, pb := flow.Propensities(d.Rule, d.Offers)
			if math.Abs(pb[taken]-d.Propensity) > 1e-9 {
				mismatch++
			}
			r.shadow = r.shadow && d.Shadow
			r.steps[i] = step{offers: d.Offers, logged: d.Rule, taken: taken, p: d.Propensity, pb: pb, settle: first + i}
		}
		first += len(r.steps)
		runs[k] = r
	}
	// Rewards, and when each was settled: a lookup the agent could see
	// (served) may change what it did next, so its reward is known only
	// once the matching call's turn closed, or the next write was made, or
	// the session ended; every decision made before then shares its weight.
	// In shadow the agent never sees a lookup, and a reward is settled when
	// its decision is made.
	before := func(at int) int { // the last decision of a run made before event at
		last := -1
		for _, r := range runs {
			if r.at >= at {
				break
			}
			last = r.first + len(r.steps) - 1
		}
		return last
	}
	total := 0
	for _, r := range runs {
		total += len(r.steps)
	}
	lookups, hits := 0, 0.0
	for k := range runs {
		r := &runs[k]
		site := placed[order[k]]
		for i := range r.steps {
			st := &r.steps[i]
			if st.taken == len(st.offers) {
				continue
			}
			lookups++
			hit, credit, at := x.hit(site, &st.offers[st.taken])
			shadow := s.Runs[order[k]].Decisions[i].Shadow
			switch lk := byDecision[offset[order[k]]+i]; {
			case lk != nil && !shadow:
				// A hit saves its share of the turns its level saved; a
				// detour costs t: r = saved − (1 − hit)·t, at the
				// estimate and at each bound.
				t := rw.DetourCost
				st.h, st.credit, st.served = lk.Hit.Est, lk.Saved.Est, true
				st.r = lk.Saved.Est - (1-lk.Hit.Est)*t
				st.rLo = lk.Saved.Lo - (1-lk.Hit.Lo)*t
				st.rHi = lk.Saved.Hi - (1-lk.Hit.Hi)*t
				st.hitB, st.savedB = lk.Hit, lk.Saved
			case hit:
				st.h, st.credit, st.r = 1, credit, credit
			default:
				st.r = -rw.DetourCost
			}
			if !st.served {
				st.rLo, st.rHi = st.r, st.r
				st.hitB, st.savedB = earned.Bounds{Lo: st.h, Est: st.h, Hi: st.h}, earned.Bounds{Lo: st.credit, Est: st.credit, Hi: st.credit}
			}
			hits += st.h
			switch {
			case st.served:
				// What a served lookup earned rests on everything the
				// agent did later (a value of its answer in any later
				// call, the agent's next turn, the other lookups of its
				// level): settled at the end of the session.
				st.settle = total - 1
			case !shadow:
				st.settle = max(st.settle, before(at))
			}
		}
	}
	tl.mismatch += mismatch
	tl.lookups += lookups
	tl.hits += hits
	u.runs, u.steps = runs, first
	return u, true
}
