package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcplog"
)

// Decider names where a lookup's P(tool) comes from (manual, --flow-decider).
// It is the flow log's type: the log names the decider a rule used.
type Decider = mcplog.Decider

// The deciders. Reach and habit only count; the arbiter combines counts,
// and the System-One model's answer when it was learned with one (oracle.go).
const (
	// Reach is how often the agent made the lookup before its next write.
	Reach = mcplog.DeciderReach
	// Habit is how often it made it in its next LLM turn.
	Habit = mcplog.DeciderHabit
	// ArbiterDecider is the flow's arbiter: reach, habit, the binding and
	// the predicate combined into one calibrated probability of a hit.
	ArbiterDecider = mcplog.DeciderArbiter
)

// ParseDecider checks a --flow-decider value; "" is the flow's default,
// which NewSession resolves: the arbiter for a flow that has one, else
// reach (manual, --flow-decider).
func ParseDecider(s string) (Decider, error) {
	switch Decider(s) {
	case "":
		return "", nil
	case Reach, Habit, ArbiterDecider:
		return Decider(s), nil
	}
	return "", fmt.Errorf("unknown decider %q: want arbiter, reach or habit", s)
}

// DefaultDecider returns the decider a flow is served with when none is
// named: its arbiter, when it has one, else reach.
func (f *Flow) DefaultDecider() Decider {
	if f.Arbiter != nil {
		return ArbiterDecider
	}
	return Reach
}

// DefaultThreshold is --flow-threshold's default: the least P(tool) ×
// P(binding matched) a lookup needs (manual, "Active mode"). It is the
// ratio of what a detour costs to what a saved turn is worth (the hoist
// overview): ThresholdOf(DefaultDetourCost, DefaultTurnValue).
const DefaultThreshold = 0.3

// The defaults of --detour-cost and --turn-value, whose ratio is the
// default threshold.
const (
	DefaultDetourCost = 0.3
	DefaultTurnValue  = 1.0
)

// ThresholdOf returns the threshold a detour cost and a turn's value give:
// a lookup pays when P(hit) × value > (1 − P(hit)) × cost, roughly when
// P(hit) > cost/value for the small costs detours have; capped at 1.
func ThresholdOf(detourCost, turnValue float64) float64 {
	if turnValue <= 0 {
		return 1
	}
	return min(1, detourCost/turnValue)
}

// DetourBytes is the result size the detour cost is quoted at: a lookup
// whose results average more costs more per detour, in proportion, so its
// threshold is scaled by MeanBytes/DetourBytes (its offers' Cost).
const DetourBytes = 4096

// Caps bound what one session's flow may do (--flow-per-call,
// --flow-per-session, --flow-questions, --flow-max-bytes). Questions bounds
// the questions put to Options.Oracle, which only an arbiter with a weight
// for its answer asks (oracle.go). MaxBytes bounds what a run appends to
// one result (0: no bound): a lookup whose answer would pass it is left out,
// and the run ends, saying so in its decision's Reason.
type Caps struct {
	PerCall    int `json:"per_call"`
	PerSession int `json:"per_session"`
	Questions  int `json:"questions"`
	MaxBytes   int `json:"max_bytes"`
}

// DefaultMaxBytes is --flow-max-bytes's default: 16 KiB, sized by the
// held-out replay of the τ²-bench training tasks (docs/flow.md, "What
// each lever earned"): 8 KiB left out runs of an order and its products
// that saved turns, and no larger cap saved one more; small enough that one
// result never grows by a whole knowledge graph.
const DefaultMaxBytes = 16384

// DefaultCaps are the manual's defaults.
var DefaultCaps = Caps{PerCall: 8, PerSession: 40, Questions: 300, MaxBytes: DefaultMaxBytes}

// Rule is the decision rule: which decider, the threshold, and the
// exploration rate ε (--flow-explore). It is all Rescore needs, beside the
// logged offers, to score a decision again. Its definition is the flow
// log's (mcplog.FlowRule), which records it with every line.
type Rule = mcplog.FlowRule

// Offer is one lookup offered at a decision: one call (a fan-out offers one
// per value), with the probabilities the decision is made from, as the flow
// log records it (mcplog.FlowOffer: Score, PTool and Label are its own).
type Offer = mcplog.FlowOffer

// Stop is the value of a decision site that hands back to the agent.
const Stop = mcplog.Stop

// Propensities returns rule r's greedy choice among offers (an index, or
// -1 for Stop) and the probability of each action: p[i] for offers[i] and
// p[len(offers)] for Stop. They sum to one.
//
// Greedy is the offer of highest Score at or above the threshold (scaled by
// the offer's Cost), the first of equals; Stop when none reaches it. With probability ε the rule explores:
// it takes another offer, drawn in proportion to the decider's scores among
// the offers other than the greedy one (uniformly when those scores are all
// zero), so
//
//	p(greedy) = 1 − ε            (1 when there is no other offer)
//	p(a)      = ε · d(a) / Σ_{b ≠ greedy} d(b)
//
// the weighted exploration without the greedy action of docs/ope.md §6.
func Propensities(r Rule, offers []Offer) (greedy int, p []float64) {
	p = make([]float64, len(offers)+1)
	return propensities(r, offers, p)
}

// propensities is Propensities into p, which holds len(offers)+1 zeros.
func propensities(r Rule, offers []Offer, p []float64) (int, []float64) {
	greedy, best := -1, -1.0
	for i := range offers {
		if s := offers[i].Score(r.Decider); s >= offers[i].Threshold(r.Threshold) && s > best {
			greedy, best = i, s
		}
	}
	g := greedy
	if g < 0 {
		g = len(offers)
	}
	others, sum := 0, 0.0
	for i := range offers {
		if i != greedy {
			others++
			sum += offers[i].Score(r.Decider)
		}
	}
	eps := r.Epsilon
	if others == 0 || eps <= 0 {
		p[g] = 1
		return greedy, p
	}
	p[g] = 1 - eps
	for i := range offers {
		if i == greedy {
			continue
		}
		if sum > 0 {
			p[i] = eps * offers[i].Score(r.Decider) / sum
		} else {
			p[i] = eps / float64(others)
		}
	}
	return greedy, p
}

// Decision is one decision of a run, as the flow log records it
// (mcplog.FlowDecision: Value and TakenOffer are its own).
type Decision = mcplog.FlowDecision

// Options say how a session serves a flow (hoist-mcp's --flow flags).
type Options struct {
	Rule Rule
	Caps Caps
	// Server is this proxy's server name. A flow of several servers looks up
	// only this server's tools; a server none of the flow's gets none.
	Server string
	// Tools, when not nil, are the only tools the flow may call (--flow-tools).
	Tools []string
	// TaskID picks the fold (--task-id; by default the session).
	TaskID string
	// Agent is the model that drives the agent (episode.AgentModel; ""
	// when unknown): a lookup's held-out hit rate is this agent's, backed
	// off to every agent's (HeldOut.Rate).
	Agent string
	// Rand draws exploration; it must be set when Rule.Epsilon > 0.
	Rand *rand.Rand
	// Shadow decides and logs, but the proxy makes no lookup.
	Shadow bool
	// Oracle, when set, is asked the flow's question (oracle.Lookup: will
	// the agent use this lookup before it changes anything?) about each
	// offer, when the arbiter decides and has a weight for its answer;
	// within Caps.Questions per session (oracle.Limit). Its answer joins
	// the arbiter's combination ("oracle"). nil asks none.
	Oracle Oracle
	// OracleTimeout bounds the wait for one decision's questions, asked
	// at once; 0 is oracle.DefaultTimeout. A question still unanswered
	// then is no answer.
	OracleTimeout time.Duration
	// Context, when set, ends the questions in flight when it is done
	// (the proxy's close).
	Context context.Context
	// AskAlways asks about every offer, whatever the decider and the
	// arbiter's weights: learn's fit, which has no weight yet.
	AskAlways bool
	// Rest, when set, is told, at the agent's read of one element of a
	// list a fan-out at an earlier site looks up, each offer the rest of
	// that fan-out would make had it waited for this read (rest.go): the
	// elements the agent has not asked for itself since its last write,
	// each once since then. learn's fit counts them, so that a flow
	// learned with Learned.Rest knows the rest's held-out hit rate.
	Rest func(o *Offer)
}

// MaxAsked is how many calls since the last write a session remembers as
// asked for, the latest: a lookup of a call older than that may be made
// again, which costs a read; remembering them all would cost memory that
// grows with every call of a session that never writes.
const MaxAsked = 4096

// ErrUnknownServer is wrapped by NewSession's error for a proxy whose server
// is none of the flow's: it gets no lookups (manual, "Serving").
var ErrUnknownServer = errors.New("server is none of the flow's")

// Session serves a flow for one proxy session. It is not safe for concurrent
// use: the proxy runs one flow at a time, on one goroutine.
type Session struct {
	f        *Flow
	opt      Options
	fold     int
	scope    binding.Scope
	tools    map[string]string // bare name → flow name, this server's
	never    map[string]string // flow name → why it is not looked up
	asked    map[string]bool   // labels ("tool args") in flight or answered since the last write
	callTool []string          // flow name of each call
	callArgs []string          // each call's arguments, as sent ($args)
	failed   []bool            // whether each call's result failed
	used     int               // lookups made this session
	probs    []float64
	names    map[*Bound][]string   // each binding's argument names, sorted
	narrows  map[*Bound]*narrowing // each fan-out's narrowing, nil for none
	rests    map[*Bound]*rest      // where each fan-out's rest is looked up, nil for nowhere
	restOfs  map[*Bound]bool       // whether each binding is a fan-out's rest
	// agentAsked and restSeen are, with Options.Rest, the agent's own calls
	// since its last write, and the rest's offers told since then.
	// byAgent marks the agent's own calls, by index: the rest is counted
	// at the agent's reads, not at the flow's own lookups.
	agentAsked, restSeen map[string]bool
	byAgent              []bool
	// agentFactor is AgentFactor of the session's agent, 0 until needed.
	agentFactor float64
	exprs       map[*Bound]map[string]string // each binding's expressions as the flow log writes them
	ask         *asker                       // the flow's questions; nil without Options.Oracle
	// latest is each tool's latest call with a result, by index; dead the
	// calls whose results no binding can read any more, forgotten when the
	// next run starts; byIndex is true when the flow reads calls by index,
	// which keeps every result (Result).
	latest  map[string]int
	dead    []int
	byIndex bool
	// askedOrder holds asked's labels, oldest first.
	askedOrder []string
}

// NewSession prepares f for one session. A server that is none of the flow's
// gives an error wrapping ErrUnknownServer, to be said to the user; the
// proxy then serves no lookups.
func NewSession(f *Flow, opt Options) (*Session, error) {
	switch opt.Rule.Decider {
	case "":
		opt.Rule.Decider = f.DefaultDecider()
	case ArbiterDecider:
		if f.Arbiter == nil {
			return nil, errors.New("decider arbiter: this flow has no arbiter (learn it again, without --habit-only); use reach or habit")
		}
	}
	if opt.Rule.Epsilon < 0 || opt.Rule.Epsilon > 1 {
		return nil, fmt.Errorf("exploration rate %v: want 0 to 1", opt.Rule.Epsilon)
	}
	if opt.Rule.Epsilon > 0 && opt.Rand == nil {
		return nil, errors.New("exploring needs a random source")
	}
	if opt.Caps == (Caps{}) {
		opt.Caps = DefaultCaps
	}
	server := opt.Server
	if server == "" && len(f.Servers) == 1 {
		server = f.Servers[0]
	}
	if !slices.Contains(f.Servers, server) {
		add := "the flow names no server"
		switch {
		case len(f.Servers) == 1:
			add = "add --server-name " + f.Servers[0]
		case len(f.Servers) > 1:
			add = "add --server-name with one of " + strings.Join(f.Servers, ", ")
		}
		return nil, fmt.Errorf("%w: this proxy's server is %q, the flow's %s, so the flow looks nothing up; %s (the name the sessions it learned from were recorded with)",
			ErrUnknownServer, server, strings.Join(f.Servers, ", "), add)
	}
	s := &Session{
		f: f, opt: opt, fold: FoldOf(opt.TaskID, f.Folds),
		tools: map[string]string{}, never: map[string]string{},
		asked: map[string]bool{}, ask: newAsker(opt),
		byIndex: readsByIndex(f),
	}
	s.scope.Said.WordDates = f.Learned.WordDates // as it was learned
	for name, t := range f.Tools {
		if t.Server != server {
			continue
		}
		s.tools[f.BareName(name)] = name
		switch {
		case t.Kind != episode.Read:
			s.never[name] = fmt.Sprintf("a %s tool", t.Kind)
		case opt.Tools != nil && !slices.Contains(opt.Tools, f.BareName(name)):
			s.never[name] = "not in --flow-tools"
		}
	}
	return s, nil
}

// Fold returns the fold the session is served from, -1 for none.
func (s *Session) Fold() int { return s.fold }

// Listed takes the server's tools/list: a tool it marks readOnlyHint false,
// or whose input contract differs from the pinned one, is never looked up
// (manual, "Active mode"). Names are the server's own.
func (s *Session) Listed(tools []episode.Tool) {
	for _, lt := range tools {
		name, ok := s.tools[lt.Name]
		if !ok {
			continue
		}
		t := s.f.Tools[name]
		switch {
		case lt.Kind == episode.Write:
			s.never[name] = "the server marks it readOnlyHint: false"
		case t.Input != nil && !t.Input.Equal(ContractOf(lt.InputSchema)):
			s.never[name] = "the server lists another input contract than the pinned one"
		}
	}
}

// Never returns why the session never looks tool up (its own name), or "".
func (s *Session) Never(tool string) string {
	name, ok := s.tools[tool]
	if !ok {
		return "not a tool of the flow's"
	}
	return s.never[name]
}

func (s *Session) flowName(tool string) string {
	if name, ok := s.tools[tool]; ok {
		return name
	}
	return tool
}

// argNames returns a binding's argument names, sorted, made once.
func (s *Session) argNames(b *Bound) []string {
	if names, ok := s.names[b]; ok {
		return names
	}
	names := make([]string, 0, len(b.Args))
	for k := range b.Args {
		names = append(names, k)
	}
	slices.Sort(names)
	if s.names == nil {
		s.names = map[*Bound][]string{}
	}
	s.names[b] = names
	return names
}

// bindingText returns a binding's expressions as strings, made once: what
// its offers log.
func (s *Session) bindingText(b *Bound) map[string]string {
	if b.texted {
		return b.text // a flow read from a file: made once, for every session
	}
	if m, ok := s.exprs[b]; ok {
		return m
	}
	m := b.argText()
	if s.exprs == nil {
		s.exprs = map[*Bound]map[string]string{}
	}
	s.exprs[b] = m
	return m
}

// CallName returns the name a flow's tool is called by on the server.
func (s *Session) CallName(tool string) string { return s.f.BareName(tool) }

// Call records a tools/call the agent sent, by its own name, and returns its
// index for Result and Run. It counts as asked while in flight, and after,
// until a write: a write (by the flow's kinds) ends what was answered.
func (s *Session) Call(tool string, args json.RawMessage) int {
	name := s.flowName(tool)
	if t, ok := s.f.Tools[name]; ok && t.Kind == episode.Write {
		clear(s.asked)
		s.askedOrder = s.askedOrder[:0]
		clear(s.agentAsked)
		clear(s.restSeen)
	}
	label := CallLabel(name, args)
	if s.opt.Rest == nil || !s.f.Learned.Rest {
		return s.addCall(name, label, string(args))
	}
	if s.agentAsked == nil {
		s.agentAsked, s.restSeen = map[string]bool{}, map[string]bool{}
	}
	s.agentAsked[label] = true
	i := s.addCall(name, label, string(args))
	s.byAgent = append(s.byAgent, make([]bool, i+1-len(s.byAgent))...)
	s.byAgent[i] = true
	return i
}

func (s *Session) addCall(name, label, args string) int {
	i := len(s.scope.Calls)
	s.scope.Calls = append(s.scope.Calls, nil)
	s.callTool = append(s.callTool, name)
	s.callArgs = append(s.callArgs, args)
	s.failed = append(s.failed, false)
	if !s.asked[label] {
		s.asked[label] = true
		s.askedOrder = append(s.askedOrder, label)
		if len(s.askedOrder) > MaxAsked {
			// The oldest is forgotten: a session of reads without a
			// write keeps a bounded memory of them (issue 23, point 6).
			delete(s.asked, s.askedOrder[0])
			s.askedOrder = s.askedOrder[1:]
		}
	}
	return i
}

// Result records the answer to call i, before the proxy hands it back.
//
// A session keeps, of each tool, only the result of its latest call (and
// the one just recorded, the site of a decision to come): bindings read an
// earlier call's result as $last[tool], which no older result of the tool
// can be again, so a long session holds what its bindings can read, not
// every result it saw (issue 23, point 6). A flow whose bindings name calls
// by index ($call[N]) keeps them all.
func (s *Session) Result(i int, text string, failed bool) {
	if i < 0 || i >= len(s.scope.Calls) {
		return
	}
	tool := s.callTool[i]
	s.scope.Calls[i] = &binding.Result{Tool: tool, Text: text, Args: s.callArgs[i]}
	s.failed[i] = failed
	if s.byIndex {
		return
	}
	if s.latest == nil {
		s.latest = map[string]int{}
	}
	// The result that can no longer be $last[tool] is forgotten when the
	// next run starts (Run): until then it may be the site of a decision
	// to come.
	switch j, ok := s.latest[tool]; {
	case !ok:
		s.latest[tool] = i
	case j < i:
		s.latest[tool] = i
		s.dead = append(s.dead, j)
	case j > i:
		s.dead = append(s.dead, i)
	}
}

// forget forgets the results no binding can read any more, but the site
// of the run starting at call site.
func (s *Session) forget(site int) {
	keep := s.dead[:0]
	for _, i := range s.dead {
		if i == site {
			keep = append(keep, i) // forgotten at the next run
			continue
		}
		s.scope.Calls[i] = nil
		s.callArgs[i] = ""
	}
	s.dead = keep
}

// readsByIndex reports whether any binding of f reads a call by its index
// ($call[N]).
func readsByIndex(f *Flow) bool {
	for si := range f.Sites {
		for li := range f.Sites[si].Lookups {
			for bi := range f.Sites[si].Lookups[li].Bindings {
				for _, e := range f.Sites[si].Lookups[li].Bindings[bi].Args {
					if strings.HasPrefix(e.String(), "$call[") {
						return true
					}
				}
			}
		}
	}
	return false
}

// Message records a line of the conversation (the proxy's --context, read
// before each decision): what the customer says (role "user") is what
// $said and [said] bindings read. The assistant's lines are not: the agent
// repeating an id is not the customer naming it. In a flow learned with
// the agent's words (learned.agent_words), what the agent said since the
// customer's last message is heard too, for its cues and agent said
// predicates only.
func (s *Session) Message(role, text string) {
	if s.ask != nil {
		s.ask.hear(role, text) // the flow's questions show the last exchange
	}
	switch {
	case role == "user":
		s.scope.Hear(role, text)
	case role == "assistant" && s.f.Learned.AgentWords:
		s.scope.Hear(role, text)
	}
}

// cueSaid reports whether a cue's word was said by whom it names.
func (s *Session) cueSaid(c *Cue) bool {
	if c.By == CueByAgent {
		return s.scope.Agent.Named(c.Word)
	}
	return s.scope.Said.Named(c.Word)
}

// CallLabel returns the label of a call of tool (the flow's name) with args:
// "tool {canonical args}", as Offer.Label gives a lookup's and the session
// keeps its asked calls by, so that a lookup and the agent's own call of it
// compare equal (audit, promote).
func CallLabel(tool string, args json.RawMessage) string { return tool + " " + compactArgs(args) }

func compactArgs(args json.RawMessage) string {
	if len(args) == 0 {
		return "{}"
	}
	if jsontext.Kind(args) != '{' {
		return string(args)
	}
	if c, ok := jsontext.CanonicalText(args); ok {
		return c
	}
	return string(args)
}

// offersAt returns the lookups the flow offers at the site of call i, which
// has its result: for each lookup of the site the session may make, its
// best binding (in the served fold) that binds in the scope, one offer per
// call it makes.
func (s *Session) offersAt(i int, out []Offer) []Offer {
	r := s.scope.Calls[i]
	if r == nil {
		return out
	}
	site := s.f.site(s.callTool[i], s.failed[i])
	if site == nil || !site.acts() {
		return out
	}
	n := site.Count.For(s.fold)
	if n < max(s.f.MinSupport, 1) {
		return out
	}
	if out == nil {
		out = make([]Offer, 0, len(site.Lookups))
	}
	s.scope.Site = r
	if s.opt.Rest != nil && s.f.Learned.Rest && s.agentAsked != nil && i < len(s.byAgent) && s.byAgent[i] {
		s.countRests(site)
	}
	first := len(out)
	for li := range site.Lookups {
		l := &site.Lookups[li]
		if _, ok := s.never[l.Tool]; ok || s.f.Tools[l.Tool].Server == "" && len(s.f.Servers) > 1 {
			continue
		}
		if _, ok := s.f.Tools[l.Tool]; !ok || s.tools[s.f.BareName(l.Tool)] != l.Tool {
			continue // another server's tool: left to the agent
		}
		reach := l.Reach.For(s.fold)
		if reach == 0 {
			continue
		}
		if (s.f.Learned.Cues || s.f.Learned.AgentWords) && len(l.Cues) > 0 && !l.cued(s.fold, s.cueSaid, reach, n) {
			continue // none of the words it follows was said
		}
		pReach := float64(reach) / float64(n)
		pWhen, lift := 0.0, 1.0
		if p := l.Predicate; p != nil {
			// The bindings' held-out rates are taken where the predicate
			// put this site.
			pWhen = p.PWhen(s.fold, p.When.Holds(&s.scope), reach, n)
			lift = pWhen / pReach
		}
		// Of the bindings that bind and that the held-out gate lets
		// through, the one that earned most in the fold's counts
		// (Bound.Value), the first of equals. Below a binding that binds
		// and that the gate stopped, only one whose held-out rate is known
		// and clears it: a binding the fit never offered has no rate. A fan-out that the
		// conversation may narrow is gated once narrowed or not, below.
		var best *Bound
		bestAt, narrowedTo := -1, false
		var objs []json.RawMessage
		bestV, scale := 0.0, max(1, l.MeanBytes(s.fold)/DetourBytes)
		gate, stoppedV, stoppedAt := min(1, s.opt.Rule.Threshold*scale), math.Inf(-1), -1
		for bi := range l.Bindings {
			b := &l.Bindings[bi]
			if b.Narrow == nil && b.Support(s.fold) >= s.f.MinSupport && s.gated(site, l.Tool, bi, false, lift, gate) {
				if v := b.Value(s.fold, s.opt.Rule.Threshold, scale); v > stoppedV {
					// Only a binding that binds here stops those below it.
					if o, ok := binding.Bind(s.argNames(b), b.Args, &s.scope, s.opt.Caps.PerCall); ok && len(o) > 0 {
						stoppedV, stoppedAt = v, bi // the first of equals ranks first
					}
				}
			}
		}
		for bi := range l.Bindings {
			b := &l.Bindings[bi]
			if b.Support(s.fold) < s.f.MinSupport {
				continue
			}
			v := b.Value(s.fold, s.opt.Rule.Threshold, scale)
			if best != nil && v <= bestV {
				continue
			}
			if b.Narrow == nil && (v < stoppedV || v == stoppedV && bi >= stoppedAt) {
				if r := s.heldOutRate(site, l.Tool, bi, false); math.IsNaN(r) || min(1, r*lift) < gate {
					continue // gated, or below a gated binding and its rate unknown
				}
			}
			o, ok := binding.Bind(s.argNames(b), b.Args, &s.scope, s.opt.Caps.PerCall)
			if !ok || len(o) == 0 {
				continue
			}
			best, objs, bestV, bestAt = b, o, v, bi
		}
		if best == nil {
			continue
		}
		pb := best.PBinding(s.fold, reach)
		exprs := s.bindingText(best)
		if n := s.narrowed(best, scale); n != nil {
			// The customer named elements of the list: those only.
			if o, ok := binding.Bind(s.argNames(best), n.args, &s.scope, s.opt.Caps.PerCall); ok && len(o) > 0 {
				objs, exprs, pb, narrowedTo = o, n.text, n.p, true
			}
		}
		o := Offer{
			Tool:     l.Tool,
			Binding:  exprs,
			From:     site.Tool,
			PReach:   pReach,
			PHabit:   float64(l.Habit.For(s.fold)) / float64(n),
			PBinding: pb,
			Support:  n,
		}
		if l.Predicate != nil {
			o.PWhen = pWhen
		}
		if a := s.f.Arbiter; a != nil {
			o.PArbiter = a.P(InputsOf(&o), s.fold)
		}
		if mb := l.MeanBytes(s.fold); mb > DetourBytes {
			o.Cost = mb / DetourBytes
		}
		if s.gated(site, l.Tool, bestAt, narrowedTo, lift, o.Threshold(s.opt.Rule.Threshold)) {
			continue // its offers hit too rarely for this agent, held out
		}
		if s.f.Learned.Rest && !narrowedTo {
			if r := s.restFor(site, l, best); r != nil && s.defers(r, site, l, bestAt) {
				continue // it waits for the agent's first read of one element
			}
		}
		for _, args := range objs {
			o.Args = args
			out = append(out, o)
		}
	}
	s.askOracle(i, out[first:]) // all of the site's questions at once
	return out
}

// Run is one run of the flow after one of the agent's calls returned: a
// sequence of decisions, each taking a lookup or Stop, and the answers to the
// lookups taken (each a site of its own: chained decisions). Call Next until
// it returns a Decision whose Taken is -1; after each lookup taken, make it
// (unless in shadow) and give its answer to Answer; then End.
type Run struct {
	s       *Session
	call    int
	max     int
	offers  []Offer
	pending int // call index of the lookup awaiting Answer, -1 for none
	taken   int
	sites   []RunSite
	obs     int
	ended   bool
	reason  string // why the run's site was not promoted, for its first decision
	rec     RunRecord
	// appended is what the answers kept so far add to the result, in
	// bytes; kept whether the last answer is within --flow-max-bytes, and
	// over why not, for the decision that ends the run.
	appended int
	kept     bool
	over     string
}

// Run starts the run at the site of call i, which must have its Result. Its
// budget is the smaller of the caps left: per call and per session.
func (s *Session) Run(i int) *Run {
	s.forget(i)
	r := &Run{s: s, call: i, pending: -1}
	r.max = min(s.opt.Caps.PerCall, s.opt.Caps.PerSession-s.used)
	if r.max < 0 {
		r.max = 0
	}
	tool, failed := "", false
	if i >= 0 && i < len(s.callTool) {
		tool, failed = s.callTool[i], s.failed[i]
		if site := s.f.site(tool, failed); site != nil && !site.acts() {
			r.reason = "not promoted: " + site.Reason
		}
		r.offers = s.offersAt(i, nil)
	}
	r.rec = RunRecord{Type: mcplog.TypeRun, Call: tool, Failed: failed, MaxLookups: r.max, Fold: s.fold, Rule: s.opt.Rule, Shadow: s.opt.Shadow}
	return r
}

// Next makes the run's next decision and returns it, to be logged. The
// offers are the lookups of every site of the run so far that bind, that
// no call in flight or answered since the last write asked for, within the
// caps. When Taken ≥ 0, the proxy makes Offers[Taken] as a request of its own
// (unless in shadow) and passes the answer to Answer.
func (r *Run) Next() Decision {
	s := r.s
	d := Decision{Type: mcplog.TypeDecision, Site: address(mcplog.SiteDecide, len(r.sites)-r.obs), Greedy: -1, Taken: -1, Rule: s.opt.Rule, Shadow: s.opt.Shadow}
	if len(r.sites) == 0 {
		d.Reason = r.reason
	}
	if r.over != "" {
		d.Reason, r.ended = r.over, true
	}
	if r.taken < r.max && !r.ended {
		d.Offers = make([]Offer, 0, len(r.offers))
		for _, o := range r.offers {
			if !s.asked[o.Label()] {
				d.Offers = append(d.Offers, o)
			}
		}
	}
	if d.Offers == nil {
		d.Offers = []Offer{}
	}
	if cap(s.probs) < len(d.Offers)+1 {
		s.probs = make([]float64, len(d.Offers)+1)
	}
	p := s.probs[:len(d.Offers)+1]
	clear(p)
	greedy, p := propensities(s.opt.Rule, d.Offers, p)
	d.Greedy, d.Taken = greedy, greedy
	if s.opt.Rule.Epsilon > 0 && len(d.Offers) > 0 {
		d.Taken = draw(p, s.opt.Rand.Float64())
		if d.Taken == len(d.Offers) {
			d.Taken = -1
		}
	}
	t := d.Taken
	if t < 0 {
		t = len(d.Offers)
		r.ended = true
	}
	d.Propensity = p[t]
	r.sites = append(r.sites, RunSite{Address: d.Site, Value: d.Value(), LogP: math.Log(d.Propensity)})
	if d.Taken >= 0 {
		o := d.Offers[d.Taken]
		r.taken++
		s.used++
		r.pending = s.addCall(o.Tool, o.Label(), string(o.Args))
	}
	return d
}

// draw returns the index whose cumulative probability first exceeds u.
func draw(p []float64, u float64) int {
	acc := 0.0
	last := -1
	for i, x := range p {
		if x <= 0 {
			continue
		}
		acc += x
		last = i
		if u < acc {
			return i
		}
	}
	return last
}

// Answer gives the run the answer to the lookup it took last: it becomes a
// site whose lookups join the offers (chained decisions), and an answer
// site of the run (obs#j) scored by how often that tool fails.
func (r *Run) Answer(text string, failed bool) {
	if r.pending < 0 {
		return
	}
	i := r.pending
	r.pending = -1
	r.s.Result(i, text, failed)
	tool := r.s.callTool[i]
	r.sites = append(r.sites, RunSite{
		Address: address(mcplog.SiteObs, r.obs),
		Value:   outcome(failed),
		LogP:    r.s.f.answerLogP(tool, failed, r.s.fold),
	})
	r.obs++
	size := AppendedSize(r.s.CallName(tool), json.RawMessage(r.s.callArgs[i]), text)
	if max := r.s.opt.Caps.MaxBytes; max > 0 && r.appended+size > max {
		// Left out: the agent never sees it, so nothing chains from it,
		// and the run ends here.
		r.kept = false
		r.over = fmt.Sprintf("over --flow-max-bytes %d: the lookups kept append %d bytes, and %s's answer (%d more) was left out", max, r.appended, tool, size)
		return
	}
	r.kept = true
	r.appended += size
	r.offers = r.s.offersAt(i, r.offers)
}

// Kept reports whether the answer Answer took last is within
// --flow-max-bytes: one that is not is left out of what the proxy appends.
func (r *Run) Kept() bool { return r.kept }

// AppendedSize is the bytes a lookup's answer adds to the result it is
// appended to: its tool, arguments and text, as the appended item lists
// them (mcpmsg.FormatLookups), near enough for a cap.
func AppendedSize(tool string, args json.RawMessage, text string) int {
	return len(tool) + 1 + len(args) + 2 + len(text) + 2
}

func outcome(failed bool) string {
	if failed {
		return "error"
	}
	return "ok"
}

// answerLogP is the log-probability of a lookup's outcome: the tool's failure
// rate among the agent's calls of it in the served fold, smoothed by one on
// each side (Laplace), so no answer is impossible.
func (f *Flow) answerLogP(tool string, failed bool, fold int) float64 {
	var nOK, nFail int
	if s := f.site(tool, false); s != nil {
		nOK = s.Count.For(fold)
	}
	if s := f.site(tool, true); s != nil {
		nFail = s.Count.For(fold)
	}
	n := nOK
	if failed {
		n = nFail
	}
	return math.Log(float64(n+1) / float64(nOK+nFail+2))
}

// End returns the run's record, to be logged after its decisions.
func (r *Run) End() RunRecord {
	rec := r.rec
	rec.Sites = slices.Clone(r.sites)
	if rec.Sites == nil {
		rec.Sites = []RunSite{}
	}
	rec.Surprise = surprise(rec.Sites)
	return rec
}

func surprise(sites []RunSite) float64 {
	s := 0.0
	for i := range sites {
		if sites[i].IsAnswer() {
			s -= sites[i].LogP
		}
	}
	return s
}

// addresses caches the first site addresses of a run, which every run uses.
var addresses = func() (a [2][16]string) {
	for i := range a[0] {
		a[0][i] = mcplog.SiteDecide + strconv.Itoa(i)
		a[1][i] = mcplog.SiteObs + strconv.Itoa(i)
	}
	return a
}()

// address returns the site address name#i.
func address(name string, i int) string {
	if i < len(addresses[0]) {
		if name == mcplog.SiteDecide {
			return addresses[0][i]
		}
		return addresses[1][i]
	}
	return name + strconv.Itoa(i)
}
