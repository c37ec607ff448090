package mcplog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/hoist-mcp/hoist/jsontext"
)

// The flow log is the file hoist-mcp --flow writes beside a session log,
// <session>.flow.jsonl (DESIGN.md, "Flow log"): one FlowDecision line per
// decision of a run, then the run's FlowRun line; or, when the flow serves
// nothing in the session, one FlowOff line that says why. These are its one
// definition: the proxy marshals them with encoding/json, ingest reads them
// with FlowReader, and flow, promote, evaluate and the store work on them.

// The values of a flow-log line's "type".
const (
	TypeDecision = "decision"
	TypeRun      = "run"
	TypeOff      = "off"
)

// FlowOff is the flow log's line for a session the flow serves nothing in,
// written once when the proxy knows it: a flow of other servers than this
// proxy's (the name it was recorded with), so that the log says why no
// decision follows.
type FlowOff struct {
	Type string `json:"type"` // TypeOff
	// Server is the proxy's server name; FlowServers the flow's.
	Server      string   `json:"server"`
	FlowServers []string `json:"flow_servers"`
	// Reason is what the proxy said, with what to change.
	Reason string `json:"reason"`
}

// Decider names where an offer's P(tool) comes from (hoist-mcp's
// --flow-decider). The flow package says which deciders exist and what
// they mean; the log only names them.
type Decider string

// The deciders a flow log names.
const (
	DeciderReach   Decider = "reach"
	DeciderHabit   Decider = "habit"
	DeciderArbiter Decider = "arbiter"
)

// FlowRule is the decision rule a flow was served with: the decider, the
// threshold on an offer's Score and the exploration rate ε.
type FlowRule struct {
	Decider   Decider `json:"decider"`
	Threshold float64 `json:"threshold"`
	Epsilon   float64 `json:"epsilon"`
}

// FlowOffer is one lookup offered at a decision: one call (a fan-out
// offers one per value), with the probabilities the decision is made from.
type FlowOffer struct {
	// Tool is the flow's name of the tool the proxy calls.
	Tool string `json:"tool"`
	// Args are the bound arguments, as sent.
	Args json.RawMessage `json:"args"`
	// Binding is the binding expression of each argument, as the flow file
	// writes it (package binding parses it).
	Binding map[string]string `json:"binding"`
	// From is the site that offered it: the tool whose result was read.
	From string `json:"from"`
	// PReach and PHabit are the deciders' P(tool); PBinding is P(binding
	// matched): how often this binding reproduced the agent's arguments.
	PReach   float64 `json:"p_reach"`
	PHabit   float64 `json:"p_habit"`
	PBinding float64 `json:"p_binding"`
	// PWhen is P(reach) given the lookup's predicate held or not at the
	// site, when it has one (0: none); PArbiter the arbiter's calibrated
	// probability that the agent makes this very call before its next
	// write, when the flow has an arbiter (0: none).
	PWhen    float64 `json:"p_when,omitempty"`
	PArbiter float64 `json:"p_arbiter,omitempty"`
	// Cost is what a detour of this lookup costs beside a detour of a
	// result of the usual size (1, when 0): the rule's threshold is scaled
	// by it for this offer.
	Cost float64 `json:"cost,omitempty"`
	// Support is the site's count in the served fold.
	Support int `json:"support"`
	// POracle is the System-One model's P(yes) for the flow's question
	// about this lookup (will the agent use it before it changes
	// anything?), when it answered; the arbiter read it as its "oracle"
	// input. OracleKey names the question's cache entry whenever one was
	// asked, answered or not, OracleCached says the answer came from the
	// cache, and OracleWhy says why there is none (oracle.Why: unset,
	// miss, spent, failed, canceled). All absent when no question was
	// asked (issue 11).
	POracle      *float64 `json:"p_oracle,omitempty"`
	OracleKey    string   `json:"oracle_key,omitempty"`
	OracleCached bool     `json:"oracle_cached,omitempty"`
	OracleWhy    string   `json:"oracle_why,omitempty"`
}

// PTool returns the decider's P(tool): PHabit for DeciderHabit, PArbiter
// for DeciderArbiter, PReach for any other.
func (o *FlowOffer) PTool(d Decider) float64 {
	switch d {
	case DeciderHabit:
		return o.PHabit
	case DeciderArbiter:
		return o.PArbiter
	}
	return o.PReach
}

// Score returns what a rule's threshold applies to under decider d:
// P(tool) × P(binding matched), or the arbiter's probability, which
// already counts the binding.
func (o *FlowOffer) Score(d Decider) float64 {
	if d == DeciderArbiter {
		return o.PArbiter
	}
	return o.PTool(d) * o.PBinding
}

// Threshold returns the least Score the offer needs under a rule's
// threshold t: t scaled by the offer's Cost.
func (o *FlowOffer) Threshold(t float64) float64 {
	if o.Cost > 1 {
		return min(1, t*o.Cost)
	}
	return t
}

// Label returns the offer's value at its decision site, "tool {args}": the
// value a run line's decide# site records, and how a lookup compares with
// the agent's own call of it.
func (o *FlowOffer) Label() string { return o.Tool + " " + string(o.Args) }

// Stop is the value of a decision that hands back to the agent.
const Stop = "stop"

// FlowDecision is a flow log's decision line.
type FlowDecision struct {
	Type string `json:"type"` // TypeDecision
	// Site is the decision's address in its run: decide#0, decide#1, …
	Site   string      `json:"site"`
	Offers []FlowOffer `json:"offers"`
	// Greedy is the rule's own choice and Taken what was taken: an index
	// into Offers, or -1 for Stop.
	Greedy int `json:"greedy"`
	Taken  int `json:"taken"`
	// Propensity is the probability that the rule took what it took.
	Propensity float64  `json:"propensity"`
	Rule       FlowRule `json:"rule"`
	Shadow     bool     `json:"shadow,omitempty"`
	// Seed is the seed of the session's exploration draws, when it
	// explores (Rule.Epsilon > 0): each session draws from one of its own
	// unless --flow-explore-seed names it, and this says which.
	Seed *uint64 `json:"seed,omitempty"`
	// Reason is set when the decision hands back because the run's site was
	// not promoted: "not promoted: " and the reason promotion gave (manual,
	// "A promoted flow hands back after a call whose site was not promoted,
	// with the reason the site is not promoted"); or because the answers
	// would pass --flow-max-bytes: "over --flow-max-bytes …".
	Reason string `json:"reason,omitempty"`
}

// TakenOffer returns the offer taken, or nil when the decision stopped.
func (d *FlowDecision) TakenOffer() *FlowOffer {
	if d.Taken < 0 || d.Taken >= len(d.Offers) {
		return nil
	}
	return &d.Offers[d.Taken]
}

// Value returns the decision's value: the taken offer's Label, or Stop.
func (d *FlowDecision) Value() string {
	if o := d.TakenOffer(); o != nil {
		return o.Label()
	}
	return Stop
}

// UnmarshalJSON reads a decision line by FlowReader's rules, so that every
// reader of one agrees (jsontext's policy: names compared exactly).
func (d *FlowDecision) UnmarshalJSON(b []byte) error {
	if isNull(b) {
		return nil // encoding/json's rule: null leaves the value as it was
	}
	out, err := decodeDecision(bytes.Clone(b))
	if err != nil {
		return err
	}
	*d = out
	return nil
}

// The address prefixes of a run's sites: decide#i for a decision, obs#j
// for the answer to a lookup.
const (
	SiteDecide = "decide#"
	SiteObs    = "obs#"
)

// FlowSite is one site of a run (docs/flow.md): a decision (decide#i, its
// value the lookup taken or Stop, logp the log-propensity of that choice)
// or an answer (obs#j, "ok" or "error", logp its log-probability under the
// flow's statistics). Its JSON is [address, value, logp], with null for a
// logp of −Inf.
type FlowSite struct {
	Address string
	Value   string
	LogP    float64
}

// IsDecision reports whether the site is a decision's (decide#i).
func (s *FlowSite) IsDecision() bool { return strings.HasPrefix(s.Address, SiteDecide) }

// IsAnswer reports whether the site is a lookup's answer (obs#j).
func (s *FlowSite) IsAnswer() bool { return strings.HasPrefix(s.Address, SiteObs) }

// MarshalJSON writes [address, value, logp]; a logp of −Inf is null, and
// NaN or +Inf, which no run gives, is an error.
func (s FlowSite) MarshalJSON() ([]byte, error) {
	var lp any = s.LogP
	if math.IsInf(s.LogP, -1) {
		lp = nil
	} else if math.IsNaN(s.LogP) || math.IsInf(s.LogP, 1) {
		return nil, fmt.Errorf("site %s: logp %v", s.Address, s.LogP)
	}
	return json.Marshal([]any{s.Address, s.Value, lp})
}

// UnmarshalJSON reads [address, value, logp]; null is −Inf.
func (s *FlowSite) UnmarshalJSON(b []byte) error {
	if isNull(b) {
		return nil
	}
	site, err := decodeSite(fields{}, bytes.Clone(b))
	if err != nil {
		return err
	}
	*s = site
	return nil
}

// FlowRun is a flow log's run line: the program's data (call, failed,
// max_lookups), the fold and rule it was served with, each site in the
// order visited, and the surprise of the answers in nats (−Σ logp over
// the answer sites).
type FlowRun struct {
	Type       string     `json:"type"` // TypeRun
	Call       string     `json:"call"`
	Failed     bool       `json:"failed"`
	MaxLookups int        `json:"max_lookups"`
	Fold       int        `json:"fold"`
	Rule       FlowRule   `json:"rule"`
	Sites      []FlowSite `json:"sites"`
	Surprise   float64    `json:"surprise"`
	Shadow     bool       `json:"shadow,omitempty"`
}

// LogPolicy returns Σ logp over the run's decision sites: the
// log-probability of its decisions under the rule that scored it (−Inf
// when one of them was impossible).
func (r *FlowRun) LogPolicy() float64 {
	s := 0.0
	for i := range r.Sites {
		if r.Sites[i].IsDecision() {
			s += r.Sites[i].LogP
		}
	}
	return s
}

// Counts returns how many decision sites and answer sites the run has: its
// decisions, and the lookups it made and had answered.
func (r *FlowRun) Counts() (decisions, answers int) {
	for i := range r.Sites {
		switch {
		case r.Sites[i].IsDecision():
			decisions++
		case r.Sites[i].IsAnswer():
			answers++
		}
	}
	return decisions, answers
}

// UnmarshalJSON reads a run line by FlowReader's rules.
func (r *FlowRun) UnmarshalJSON(b []byte) error {
	if isNull(b) {
		return nil
	}
	out, err := decodeRun(bytes.Clone(b))
	if err != nil {
		return err
	}
	*r = out
	return nil
}

// FlowLine is one line of a flow log, read: a decision or a run.
type FlowLine struct {
	// Line is the line's number in the file, from 1; 0 from ParseFlowLine.
	Line int
	// Exactly one of Decision, Run and Off is set, by the line's type.
	Decision *FlowDecision
	Run      *FlowRun
	Off      *FlowOff
	// Raw is the line as the file holds it, without its line end: what the
	// store keeps beside the parsed line, so that nothing of it is lost.
	// The offers' Args share its memory.
	Raw []byte
}

// ParseFlowLine parses one line of a flow log. A line that is not a
// decision or a run line is an *InputError naming the member at fault, such
// as "offers[1].tool" or "taken", with File and Line left for the caller.
// The parsed line's raw values alias b.
func ParseFlowLine(b []byte) (FlowLine, error) {
	l, err := parseFlowLine(b)
	if err != nil {
		return FlowLine{}, err
	}
	return l, nil
}

func parseFlowLine(b []byte) (FlowLine, *InputError) {
	l := FlowLine{Raw: b}
	if !jsontext.Valid(b) || jsontext.Kind(b) != '{' {
		return FlowLine{}, &InputError{Err: errors.New("not a JSON object")}
	}
	typ, _ := jsontext.Lookup(b, "type")
	got := ""
	if jsontext.Kind(typ) == '"' {
		got = jsontext.Unquote(typ)
	}
	switch got {
	case TypeDecision:
		d, err := decodeDecision(b)
		if err != nil {
			return FlowLine{}, err
		}
		l.Decision = &d
	case TypeRun:
		r, err := decodeRun(b)
		if err != nil {
			return FlowLine{}, err
		}
		l.Run = &r
	case TypeOff:
		o := FlowOff{Type: TypeOff}
		var f fields
		f.decode(b, []member{{"type", &o.Type}, {"server", &o.Server}, {"reason", &o.Reason},
			{"flow_servers", func(f *fields, v []byte) { o.FlowServers = f.stringList("flow_servers", v) }}})
		if f.err != nil {
			return FlowLine{}, f.err
		}
		l.Off = &o
	default:
		return FlowLine{}, &InputError{Field: "type", Err: fmt.Errorf("want %q, %q or %q, got %q", TypeDecision, TypeRun, TypeOff, got)}
	}
	return l, nil
}

// FlowReader reads a flow log one line at a time, streaming. Like the
// session log's Reader it goes on past a malformed line: Next returns an
// *InputError naming the file, line and field, and the next call reads on
// (encoding/csv's per-record errors), since one bad decision leaves the
// others usable. A torn last line (no final newline, and not whole JSON),
// which the proxy may still be writing, ends the log without an error;
// Torn reports it.
//
// A FlowReader is not safe for concurrent use.
type FlowReader struct {
	records
}

// NewFlowReader returns a FlowReader of r; name is the file name errors
// give.
func NewFlowReader(r io.Reader, name string) *FlowReader {
	return &FlowReader{newRecords(r, name)}
}

// Next returns the next line, or io.EOF after the last. A malformed line is
// an *InputError, and Next may be called again for the lines after it.
func (r *FlowReader) Next() (FlowLine, error) {
	return nextParsed(&r.records, "flow log", parseFlowLine, nil)
}

func (l *FlowLine) setLine(n int) { l.Line = n }

// Lines returns the number of lines read so far, blank and torn ones
// included: at the end, the file's.
func (r *FlowReader) Lines() int { return r.line }

// Torn reports whether the log ended in a torn line, which Next skipped.
// It is known once Next has returned io.EOF.
func (r *FlowReader) Torn() bool { return r.torn }

// decodeDecision decodes a decision line, b valid JSON; Offers and their
// Args alias b.
func decodeDecision(b []byte) (FlowDecision, *InputError) {
	d := FlowDecision{Type: TypeDecision}
	var f fields
	var hasGreedy, hasTaken bool
	f.decode(b, []member{
		{"type", &d.Type}, {"site", &d.Site},
		{"offers", func(f *fields, v []byte) { d.Offers = decodeList(f, "offers", v, decodeOffer) }},
		{"greedy", func(f *fields, v []byte) { d.Greedy, hasGreedy = f.int("greedy", v), !isNull(v) }},
		{"taken", func(f *fields, v []byte) { d.Taken, hasTaken = f.int("taken", v), !isNull(v) }},
		{"propensity", &d.Propensity}, {"rule", ruleMember(&d.Rule)}, {"shadow", &d.Shadow}, {"reason", &d.Reason},
		{"seed", func(f *fields, v []byte) {
			if isNull(v) {
				return
			}
			n, err := strconv.ParseUint(string(v), 10, 64)
			if err != nil {
				f.want("seed", "an unsigned integer", v)
				return
			}
			d.Seed = &n
		}},
	})
	switch {
	case f.err != nil:
		return FlowDecision{}, f.err
	case d.Site == "":
		return FlowDecision{}, missing("site")
	case !hasGreedy || d.Greedy < -1 || d.Greedy >= len(d.Offers):
		return FlowDecision{}, &InputError{Field: "greedy", Err: fmt.Errorf("want -1 or an index into %d offers", len(d.Offers))}
	case !hasTaken || d.Taken < -1 || d.Taken >= len(d.Offers):
		return FlowDecision{}, &InputError{Field: "taken", Err: fmt.Errorf("want -1 or an index into %d offers", len(d.Offers))}
	}
	return d, nil
}

// decodeOffer decodes one element of a decision's offers.
func decodeOffer(f fields, b []byte) (FlowOffer, *InputError) {
	var o FlowOffer
	f.decode(b, []member{
		{"tool", &o.Tool}, {"args", &o.Args}, {"binding", &o.Binding}, {"from", &o.From},
		{"p_reach", &o.PReach}, {"p_habit", &o.PHabit}, {"p_binding", &o.PBinding}, {"support", &o.Support},
		{"p_when", &o.PWhen}, {"p_arbiter", &o.PArbiter}, {"cost", &o.Cost},
		{"p_oracle", func(f *fields, v []byte) {
			if !isNull(v) {
				p := f.float("p_oracle", v)
				o.POracle = &p
			}
		}},
		{"oracle_key", &o.OracleKey}, {"oracle_cached", &o.OracleCached}, {"oracle_why", &o.OracleWhy},
	})
	if f.err != nil {
		return FlowOffer{}, f.err
	}
	return o, nil
}

// ruleMember decodes a line's rule into r.
func ruleMember(r *FlowRule) func(*fields, []byte) {
	return func(f *fields, v []byte) {
		in := f.in("rule")
		in.decode(v, []member{{"decider", (*string)(&r.Decider)}, {"threshold", &r.Threshold}, {"epsilon", &r.Epsilon}})
		f.err = in.err
	}
}

// decodeRun decodes a run line, b valid JSON.
func decodeRun(b []byte) (FlowRun, *InputError) {
	r := FlowRun{Type: TypeRun}
	var f fields
	f.decode(b, []member{
		{"type", &r.Type}, {"call", &r.Call}, {"failed", &r.Failed}, {"max_lookups", &r.MaxLookups}, {"fold", &r.Fold},
		{"rule", ruleMember(&r.Rule)},
		{"sites", func(f *fields, v []byte) { r.Sites = decodeList(f, "sites", v, decodeSite) }},
		{"surprise", &r.Surprise}, {"shadow", &r.Shadow},
	})
	if f.err != nil {
		return FlowRun{}, f.err
	}
	return r, nil
}

// decodeSite decodes [address, value, logp]; a logp of null is −Inf.
func decodeSite(f fields, b []byte) (FlowSite, *InputError) {
	if jsontext.Kind(b) != '[' || jsontext.Len(b) != 3 {
		return FlowSite{}, f.want("", "[address, value, logp]", b)
	}
	var s FlowSite
	i := 0
	for val := range jsontext.Elements(b) {
		switch i {
		case 0:
			s.Address = f.str("address", val)
		case 1:
			s.Value = f.str("value", val)
		case 2:
			if isNull(val) {
				s.LogP = math.Inf(-1)
			} else {
				s.LogP = f.float("logp", val)
			}
		}
		if f.err != nil {
			return FlowSite{}, f.err
		}
		i++
	}
	return s, nil
}
