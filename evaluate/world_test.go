package evaluate

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/earned"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// shop is a simulated retail world served through the real flow.Session,
// for the tests that check the estimates against values known exactly
// (issue 18). Its sessions are dependent in every way the proxy makes them
// so: a lookup taken in one run is not offered again in later runs until a
// write (the asked set), the session's lookup cap spans its runs, served
// lookups chain (their answers offer lookups of their own), and in served
// sessions a trusting agent skips the calls whose results lookups appended,
// so which calls, runs and turns follow depends on what the flow did.
//
// The agent's randomness is its task, drawn from a finite list; given the
// task the agent is deterministic, so a deterministic rule (ε = 0) gives
// one session per task, and the true value of a rule is a finite sum. The
// logging rule's randomness is its exploration, whose draws the tests
// enumerate (enumerate) to get every session the logging rule can produce
// with its probability.
type shop struct {
	f     *flow.Flow
	caps  flow.Caps
	cost  float64
	tasks []task
}

// task is one kind of customer and agent: its data and its plan. Each step
// of the plan is one LLM turn of the agent's calls (its parallel calls).
type task struct {
	name   string
	p      float64
	skip   skipping
	orders string // the user's orders, as get_user lists them
	plan   [][]call
}

// skipping is what an agent does with the results lookups appended.
type skipping int

const (
	// checks: it makes every call of its plan whatever it was given.
	checks skipping = iota
	// skipsCalls: it does not make a call a lookup answered since its last
	// write, as hoist-procedure does.
	skipsCalls
	// skipsTurns: it skips a turn all of whose calls lookups answered, and
	// otherwise makes every call of it.
	skipsTurns
)

type call struct{ tool, args string }

func (c call) label() string { return flow.CallLabel(c.tool, json.RawMessage(c.args)) }

func newShop() *shop {
	bind := func(m map[string]string) map[string]binding.Expr {
		out := map[string]binding.Expr{}
		for k, v := range m {
			out[k] = binding.MustParse(v)
		}
		return out
	}
	read := func(tool string, reach, habit, n int, args map[string]string) flow.Lookup {
		return flow.Lookup{Tool: tool, Reach: flow.Count{N: reach}, Habit: flow.Count{N: habit},
			Bindings: []flow.Bound{{Args: bind(args), Matched: flow.Count{N: n}}}}
	}
	f := &flow.Flow{
		Version: flow.Version, Domain: "shop", Servers: []string{"shop"}, MinSupport: 1,
		Tools: map[string]flow.Tool{
			"find_user":   {Server: "shop", Kind: episode.Read},
			"get_user":    {Server: "shop", Kind: episode.Read},
			"get_order":   {Server: "shop", Kind: episode.Read},
			"get_cart":    {Server: "shop", Kind: episode.Read},
			"get_product": {Server: "shop", Kind: episode.Read},
			"cancel":      {Server: "shop", Kind: episode.Write},
		},
		// Scores (reach × binding): after a cancel, the order again (0.8);
		// after finding the user, the user (0.9); after the cart, its
		// order (0.8) and its product (0.2); after the user, its first
		// order (0.5: between the thresholds 0.3 and 0.75, so only a looser
		// rule than the logging one takes it).
		Sites: []flow.Site{
			{Tool: "cancel", Count: flow.Count{N: 100}, Lookups: []flow.Lookup{
				read("get_order", 80, 70, 80, map[string]string{"order_id": "$result.order_id"})}},
			{Tool: "find_user", Count: flow.Count{N: 100}, Lookups: []flow.Lookup{
				read("get_user", 90, 85, 90, map[string]string{"user_id": "$result.user_id"})}},
			{Tool: "get_cart", Count: flow.Count{N: 100}, Lookups: []flow.Lookup{
				read("get_order", 80, 60, 80, map[string]string{"order_id": "$result.order"}),
				read("get_product", 20, 10, 20, map[string]string{"id": "$result.product"})}},
			{Tool: "get_user", Count: flow.Count{N: 100}, Lookups: []flow.Lookup{
				read("get_order", 50, 30, 50, map[string]string{"order_id": "$result.orders[0]"})}},
		},
	}
	get := func(tool, arg, v string) call { return call{tool, fmt.Sprintf(`{%q:%q}`, arg, v)} }
	find := get("find_user", "email", "c@x")
	user := get("get_user", "user_id", "U")
	cart := get("get_cart", "user_id", "U")
	product := get("get_product", "id", "P")
	oa, ob := get("get_order", "order_id", "#a"), get("get_order", "order_id", "#b")
	cancelA := get("cancel", "order_id", "#a")
	both, none := `["#a","#b"]`, `[]`
	return &shop{
		f: f, caps: flow.Caps{PerCall: 2, PerSession: 3, Questions: 1}, cost: 0.3,
		tasks: []task{
			{"reads the user, then its first order", 0.15, skipsCalls, both, [][]call{{find}, {user}, {oa}}},
			{"reads the cart, then both orders at once unless both were given", 0.15, skipsTurns, both, [][]call{{find}, {user}, {cart}, {oa, ob}}},
			{"checks its first order, cancels it, reads it again", 0.1, checks, both, [][]call{{find}, {user}, {oa}, {cancelA}, {oa}}},
			{"reads both orders, one at a time", 0.1, checks, both, [][]call{{find}, {user}, {oa}, {ob}}},
			{"reads a user without orders", 0.15, checks, none, [][]call{{find}, {user}}},
			{"reads the cart, then its order and product", 0.2, skipsCalls, none, [][]call{{find}, {cart}, {ob, product}}},
			{"reads a user without orders, then the cart", 0.15, skipsCalls, none, [][]call{{find}, {user, cart}, {ob}}},
		},
	}
}

// answer is what the world's server answers to c.
func (w *shop) answer(t *task, c call) string {
	var a map[string]string
	json.Unmarshal([]byte(c.args), &a)
	switch c.tool {
	case "find_user":
		return `{"user_id":"U"}`
	case "get_user":
		return `{"user_id":"U","orders":` + t.orders + `}`
	case "get_cart":
		return `{"user_id":"U","order":"#b","product":"P"}`
	case "get_product":
		return `{"id":"P"}`
	case "get_order":
		return fmt.Sprintf(`{"order_id":%q,"status":"pending"}`, a["order_id"])
	case "cancel":
		return fmt.Sprintf(`{"order_id":%q,"status":"cancelled"}`, a["order_id"])
	}
	return `{}`
}

// played is one simulated session: the episode and flow log the proxy
// would have recorded, and the reward of every decision as the world
// knows it (docs/evaluate.md's definition, computed from the agent's
// own plan, not by evaluate).
type played struct {
	session Session
	p       float64 // probability of the exploration's draws
	reward  float64 // Σ of the decisions' rewards
	draws   [][]float64
}

// play runs task t once under rule, shadow or served, with the
// exploration draws from u (nil: the rule must not explore).
func (w *shop) play(t *task, rule flow.Rule, shadow bool, u []float64) played {
	src := &scripted{u: u}
	opt := flow.Options{Rule: rule, Caps: w.caps, Shadow: shadow}
	if rule.Epsilon > 0 {
		opt.Rand = rand.New(src)
	}
	s, err := flow.NewSession(w.f, opt)
	if err != nil {
		panic(err)
	}
	ep := &episode.Episode{ID: t.name, Servers: []episode.Server{{Name: "shop"}}}
	for _, name := range []string{"cancel", "find_user", "get_cart", "get_order", "get_product", "get_user"} {
		ep.Tools = append(ep.Tools, episode.Tool{Name: name, Server: "shop", Kind: w.f.Tools[name].Kind})
	}
	out := played{p: 1}
	type taken struct {
		label string
		call  int // the episode's index of the run's site call
	}
	var lookups []taken
	var agentTurn []int     // turn of each agent call, by episode call index (-1: the proxy's)
	var agentLabel []string // label of each call
	var agentTool []string  // tool of each call
	answered := map[string]bool{}
	nCalls := 0
	addCall := func(c call, by episode.Actor, turn int) *episode.Call {
		ec := &episode.Call{Index: nCalls, Server: "shop", Tool: c.tool, Args: json.RawMessage(c.args), By: by, Turn: turn}
		nCalls++
		ep.Events = append(ep.Events, episode.Event{Type: episode.EventCall, Call: ec})
		for len(ep.Turns) <= turn {
			ep.Turns = append(ep.Turns, episode.Turn{Index: len(ep.Turns)})
		}
		ep.Turns[turn].Calls = append(ep.Turns[turn].Calls, ec.Index)
		at := turn
		if by == episode.Proxy {
			at = -1
		}
		agentTurn = append(agentTurn, at)
		agentLabel = append(agentLabel, c.label())
		agentTool = append(agentTool, c.tool)
		return ec
	}
	turn := 0
	for _, step := range t.plan {
		var made []call
		for _, c := range step {
			if !(t.skip == skipsCalls && answered[c.label()]) {
				made = append(made, c)
			}
		}
		if t.skip == skipsTurns && !slices.ContainsFunc(step, func(c call) bool { return !answered[c.label()] }) {
			made = nil
		}
		if len(made) == 0 {
			continue // every call answered: the LLM turn is saved
		}
		idx := make([]int, len(made))
		ecs := make([]*episode.Call, len(made))
		for k, c := range made {
			if w.f.Tools[c.tool].Kind == episode.Write {
				clear(answered)
			}
			ecs[k] = addCall(c, episode.Agent, turn)
			idx[k] = s.Call(c.tool, json.RawMessage(c.args))
		}
		for k, c := range made {
			text := w.answer(t, c)
			s.Result(idx[k], text, false)
			r := s.Run(idx[k])
			var ds []flow.Decision
			for {
				d := r.Next()
				ds = append(ds, d)
				if len(d.Offers) > 0 && rule.Epsilon > 0 {
					_, p := flow.Propensities(d.Rule, d.Offers)
					out.draws = append(out.draws, p)
				}
				out.p *= d.Propensity
				if d.Taken < 0 {
					break
				}
				o := d.Offers[d.Taken]
				lc := call{o.Tool, string(o.Args)}
				lookups = append(lookups, taken{label: o.Label(), call: ecs[k].Index})
				if !shadow {
					pc := addCall(lc, episode.Proxy, turn)
					ans := w.answer(t, lc)
					ep.Events = append(ep.Events, episode.Event{Type: episode.EventResult, Result: &episode.Result{CallIndex: pc.Index, Text: ans}})
					r.Answer(ans, false)
					answered[o.Label()] = true
				}
			}
			r.End()
			res := &episode.Result{CallIndex: ecs[k].Index, Text: text}
			ecs[k].Result = res
			ep.Events = append(ep.Events, episode.Event{Type: episode.EventResult, Result: res})
			out.session.Runs = append(out.session.Runs, Run{Server: 0, Call: c.tool, Decisions: ds})
		}
		turn++
	}
	out.session.Episode = ep
	if !shadow && len(lookups) > 0 {
		// Served, the proxy's lookups are in the episode and each earned
		// what package earned says (docs/audit.md, "Served sessions"): a
		// hit saves its share of its level's turns, and a lookup costs
		// w.cost times the chance it was no hit.
		// An unproven lookup's estimate is the probability its offer was
		// given under the decider that logged it; the shop's logging rules
		// are reach's, so its truth for a habit rule scores the offers by
		// reach too: one reward for every rule, as evaluate's is.
		var ds []flow.Decision
		for _, r := range out.session.Runs {
			for _, d := range r.Decisions {
				d.Rule.Decider = flow.Reach
				ds = append(ds, d)
			}
		}
		for _, lk := range earned.Of(ep, ds).Lookups {
			out.reward += lk.Saved.Est - (1-lk.Hit.Est)*w.cost
		}
		return out
	}
	// The world's own reward: a lookup is a hit when the agent made the
	// same call itself after the site and before its next write, and earns
	// 1/k for a turn of k agent calls; a detour costs w.cost.
	perTurn := map[int]int{}
	for _, tn := range agentTurn {
		if tn >= 0 {
			perTurn[tn]++
		}
	}
	for _, l := range lookups {
		r := -w.cost
		for i := l.call + 1; i < len(agentTurn); i++ {
			if agentTurn[i] < 0 {
				continue
			}
			if w.f.Tools[agentTool[i]].Kind == episode.Write {
				break
			}
			if agentLabel[i] == l.label {
				r = 1 / float64(perTurn[agentTurn[i]])
				break
			}
		}
		out.reward += r
	}
	return out
}

// scripted is a random source that makes rand.Float64 return u[0], u[1], …
// and then 0.
type scripted struct {
	u []float64
	i int
}

func (s *scripted) Uint64() uint64 {
	var u float64
	if s.i < len(s.u) {
		u = s.u[s.i]
	}
	s.i++
	return uint64(u * (1 << 53))
}

// enumerate returns every session the rule can produce for task t, each
// with its probability.
func (w *shop) enumerate(t *task, rule flow.Rule, shadow bool) []played {
	var out []played
	var walk func(prefix []float64)
	walk = func(prefix []float64) {
		pl := w.play(t, rule, shadow, prefix)
		if len(pl.draws) == len(prefix) {
			out = append(out, pl)
			return
		}
		acc := 0.0
		for _, x := range pl.draws[len(prefix)] {
			if x <= 0 {
				continue
			}
			walk(append(slices.Clone(prefix), acc+x/2))
			acc += x
		}
	}
	walk(nil)
	return out
}

// law is the distribution of the sessions a rule logs: every session it
// can produce for every task, with its probability.
type law struct {
	sessions []played
	p        []float64 // task probability × the draws'
	cdf      []float64
}

func (w *shop) law(rule flow.Rule, shadow bool) *law {
	l := &law{}
	for i := range w.tasks {
		t := &w.tasks[i]
		for _, pl := range w.enumerate(t, rule, shadow) {
			l.sessions = append(l.sessions, pl)
			l.p = append(l.p, t.p*pl.p)
		}
	}
	acc := 0.0
	for _, p := range l.p {
		acc += p
		l.cdf = append(l.cdf, acc)
	}
	return l
}

// total returns Σ p over the law (1 when every branch was enumerated).
func (l *law) total() float64 { return l.cdf[len(l.cdf)-1] }

// draw returns a dataset of n sessions drawn from the law, each with an id
// of its own (the DR model's folds hash it).
func (l *law) draw(n int, tag string, rng *rand.Rand) Sessions {
	out := make(Sessions, n)
	for i := range out {
		j, _ := slices.BinarySearch(l.cdf, rng.Float64()*l.total())
		j = min(j, len(l.sessions)-1)
		s := l.sessions[j].session
		ep := *s.Episode
		ep.ID = fmt.Sprintf("%s-%d", tag, i)
		out[i] = Session{Episode: &ep, Runs: s.Runs}
	}
	return out
}

// truth is the value of a rule: the expectation of the world's reward of a
// session under it, over its law (for a rule that does not explore, Σ
// over tasks of the task's probability times the reward of the one session
// it gives).
func (w *shop) truth(rule flow.Rule, shadow bool) float64 {
	l := w.law(rule, shadow)
	v := 0.0
	for i, pl := range l.sessions {
		v += l.p[i] * pl.reward
	}
	return v
}

// expect returns, exactly, the expectation over the law of a statistic of
// one-session datasets.
func (l *law) expect(stat func(Session) float64) float64 {
	v := 0.0
	for i, pl := range l.sessions {
		v += l.p[i] * stat(pl.session)
	}
	return v
}

func TestShopLaw(t *testing.T) {
	w := newShop()
	for _, shadow := range []bool{false, true} {
		for _, eps := range []float64{0.1, 0.3} {
			l := w.law(flow.Rule{Decider: flow.Reach, Threshold: 0.75, Epsilon: eps}, shadow)
			if math.Abs(l.total()-1) > 1e-12 {
				t.Errorf("shadow %v, ε %v: the sessions' probabilities sum to %v", shadow, eps, l.total())
			}
			if len(l.sessions) < 2*len(w.tasks) {
				t.Errorf("shadow %v, ε %v: only %d sessions", shadow, eps, len(l.sessions))
			}
		}
	}
}
