package flow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/episode"
)

// Version is the flow IR version this package writes (the "hoist_flow"
// member). It reads it and every version since OldestVersion; a flow of
// another version is refused, naming its version.
const Version = 2

// OldestVersion is the oldest IR version Parse reads. Version 1 has no
// arbiter ("arbiter": false), no predicates, no result sizes and none of
// version 2's binding forms, so a version 1 flow reads as a version 2 flow
// without them and is served as it always was.
const OldestVersion = 1

// Flow is a learned flow: counts and bindings (DESIGN.md, "Flow";
// docs/flow.md explains every field). Encode it with Marshal, which is
// deterministic: the same Flow gives the same bytes.
type Flow struct {
	Version int `json:"hoist_flow"`
	// Domain is the --domain the flow was learned for.
	Domain string `json:"domain"`
	// Servers are the names of the servers whose tools the flow knows.
	Servers []string `json:"servers"`
	// Folds is K, the number of folds counts are split into by task; 0 or 1
	// means no folds.
	Folds int `json:"folds"`
	// MinSupport is the least count a site, and a binding's matches, need
	// for the flow to act on them.
	MinSupport int `json:"min_support"`
	// Arbiter combines reach, habit, the binding and the predicates into one
	// calibrated probability, fitted by learn across folds; nil for a flow
	// without one (learn --habit-only, version 1), which is served with
	// reach by default (manual, --flow-decider).
	Arbiter *Arbiter `json:"arbiter,omitempty"`
	// Learned says what the flow was learned from.
	Learned Provenance `json:"learned"`
	// Tools are every tool the episodes listed or called, by name.
	Tools map[string]Tool `json:"tools"`
	// Sites are the agent's calls that returned, by tool and outcome, with
	// the lookups that followed them; sorted by tool, then failed.
	Sites []Site `json:"sites"`
	// Shard is what hoist learn --shard adds for hoist flow merge: the
	// shard's partial counts, or its training table for the arbiter
	// (learn.MergeShards reads it; docs/scale.md). Absent from a flow
	// learned or merged whole; a proxy serves the flow and ignores it.
	Shard json.RawMessage `json:"shard,omitempty"`
}

// Provenance is what a flow was learned from.
type Provenance struct {
	Episodes int `json:"episodes"`
	// Tasks counts distinct fold keys (τ² task ids, else host sessions).
	Tasks int `json:"tasks"`
	// Sources are the episodes' sources ("mcp", "tau2"), sorted.
	Sources []string `json:"sources"`
	// Digest is "sha256:" and the sum of the episodes' digests (of their
	// ids, calls, arguments and results; AddDigest), whatever their order.
	Digest string `json:"digest"`
	// Date is the latest episode's start (UTC, RFC 3339), "" when unknown:
	// a flow carries no wall-clock time, so the same input gives the same
	// bytes.
	Date string `json:"date,omitempty"`
	// HabitOnly is set by learn --habit-only.
	HabitOnly bool `json:"habit_only,omitempty"`
	// WordDates is set when the flow was learned with dates said in words
	// counted as said (learn.Options.WordDates): it is served so too.
	WordDates bool `json:"word_dates,omitempty"`
	// Rest is set when the flow was learned with fan-outs that wait for
	// the agent's first read of one element (learn.Options.Rest): its
	// held-out rates are of the rest's offers, and it is served so too.
	Rest bool `json:"rest,omitempty"`
	// Cues is set when the flow was learned with cue words
	// (learn.Options.Cues): a lookup with cues is served only where one of
	// them was said.
	Cues bool `json:"cues,omitempty"`
	// AgentWords is set when the flow was learned with the agent's words
	// (learn.Options.AgentWords): what the agent said since the
	// customer's last message gives agent said "word" predicates and, with
	// cues, cues (Cue.By "agent"), and the session hears it so too.
	AgentWords bool `json:"agent_words,omitempty"`
}

// Tool is one tool as the flow pins it.
type Tool struct {
	Server string       `json:"server"`
	Kind   episode.Kind `json:"kind"`
	// Input is the pinned input contract, from tools/list; nil when no
	// episode listed the tool (then the proxy checks only readOnlyHint).
	Input Contract `json:"input,omitempty"`
}

// Contract is a tool's input contract as a flow pins it: each argument's
// JSON type and whether it is required (manual, "Active mode": "its
// arguments, their types and which are required").
type Contract map[string]Arg

// Arg is one argument of a contract.
type Arg struct {
	Type     string `json:"type,omitempty"`
	Required bool   `json:"required,omitempty"`
}

// ContractOf reduces a listed inputSchema to its contract. A schema that is
// missing or not an object gives nil.
func ContractOf(schema json.RawMessage) Contract {
	var s struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil || s.Properties == nil && s.Required == nil {
		return nil
	}
	c := Contract{}
	for name, p := range s.Properties {
		c[name] = Arg{Type: typeString(p.Type)}
	}
	for _, name := range s.Required {
		a := c[name]
		a.Required = true
		c[name] = a
	}
	return c
}

func typeString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		sort.Strings(ss)
		return strings.Join(ss, "|")
	}
	return ""
}

// Equal reports whether two contracts name the same arguments with the same
// types and requirements.
func (c Contract) Equal(o Contract) bool {
	if len(c) != len(o) {
		return false
	}
	for k, a := range c {
		if b, ok := o[k]; !ok || a != b {
			return false
		}
	}
	return true
}

// Site is one kind of site: the agent's call of Tool that just returned,
// failed or not, with what the agent looked up after it.
type Site struct {
	Tool   string `json:"tool"`
	Failed bool   `json:"failed"`
	// Count is how often the site occurred.
	Count Count `json:"count"`
	// Lookups are the read tools of the same server the agent called after
	// the site, sorted by tool.
	Lookups []Lookup `json:"lookups"`
	// Promoted and Reason are promotion's marks: nil when the flow was not
	// promoted; false with the reason a site does not act.
	Promoted *bool  `json:"promoted,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// acts reports whether a site may look anything up: every site of a flow
// that was not promoted, and the promoted sites of one that was.
func (s *Site) acts() bool { return s.Promoted == nil || *s.Promoted }

// Lookup is one candidate lookup at a site.
type Lookup struct {
	Tool string `json:"tool"`
	// Reach counts the site's occurrences after which the agent made this
	// lookup before its next write; Habit those where it made it in the next
	// LLM turn.
	Reach Count `json:"reach"`
	Habit Count `json:"habit"`
	// Bindings are the ways to bind its arguments that reproduced the
	// agent's own at least MinSupport times, best first. Matches are
	// counted where the lookup was reached, so P(binding) = matched/reach
	// (for a fan-out, used/calls).
	Bindings []Bound `json:"bindings"`
	// Answered and Bytes count the agent's own results of the lookup where
	// it was reached, and their text's bytes: the size of what a lookup
	// appends, which makes a detour of a large result cost more. Nil in a
	// version 1 flow.
	Answered *Count `json:"answered,omitempty"`
	Bytes    *Count `json:"bytes,omitempty"`
	// Predicate is a condition on the site's result under which the agent
	// makes the lookup more or less often, when one tells (nil when none).
	Predicate *Predicate `json:"predicate,omitempty"`
	// Cues are words the customer said before the site in whose
	// occurrences the agent made the lookup much more often than at the
	// site overall (learn.Options.Cues), the likeliest first: served, the
	// lookup is not offered where none of those that lift it in the served
	// fold (Cue.Lifts) was said.
	Cues []Cue `json:"cues,omitempty"`
}

// Cue is a word said before a lookup's site, with its counts: Said the
// site's occurrences after it was said, Reach those of them where the
// agent made the lookup before its next write, Tasks the distinct tasks
// (TaskKey) it was said in before the site. By says whose words: "" the
// customer's (said so far), CueByAgent the agent's (said since the
// customer's last message).
type Cue struct {
	Word  string `json:"word"`
	By    string `json:"by,omitempty"`
	Said  Count  `json:"said"`
	Reach Count  `json:"reach"`
	Tasks Count  `json:"tasks"`
}

// CueByAgent is Cue.By of a word the agent said.
const CueByAgent = "agent"

// Name returns the cue as flow-show names it: the word, and "agent: "
// before one the agent said.
func (c *Cue) Name() string {
	if c.By == CueByAgent {
		return "agent: " + c.Word
	}
	return c.Word
}

// CueMinTasks is the least distinct tasks (in the served fold's training
// part) a cue needs to have been said in, and CueLift how many times the
// site's rate of the lookup its rate must be. Support is counted in
// tasks, not occurrences, since a task is run by many agents: a name said
// in one task's every run is that task's, not a cue. On the τ²-bench
// tasks, 3 to 12 kept retail's precision and moved airline's (docs/flow.md).
const (
	CueMinTasks = 5
	CueLift     = 1.5
)

// Rate returns the lookup's rate after the cue was said in fold f,
// smoothed by a half on each side.
func (c *Cue) Rate(f int) float64 {
	return (float64(c.Reach.For(f)) + 0.5) / (float64(c.Said.For(f)) + 1)
}

// Lifts reports whether the cue, in fold f, was said in CueMinTasks tasks
// and its rate is CueLift times the lookup's, reached reach times at a
// site of count n.
func (c *Cue) Lifts(f int, reach, n int) bool {
	return c.Tasks.For(f) >= CueMinTasks && n > 0 && c.Rate(f) >= CueLift*float64(reach)/float64(n)
}

// cued reports whether a lookup with cues may be offered: some cue that
// lifts it in fold f was said (by whom it names), or none lifts it.
func (l *Lookup) cued(f int, said func(*Cue) bool, reach, n int) bool {
	lifts := false
	for i := range l.Cues {
		c := &l.Cues[i]
		if !c.Lifts(f, reach, n) {
			continue
		}
		if said(c) {
			return true
		}
		lifts = true
	}
	return !lifts
}

// Predicate is a lookup's condition on what its site returned, with its
// counts: P(reach | it held) = Reach/Held, and P(reach | it did not) =
// (lookup's reach − Reach)/(site's count − Held).
type Predicate struct {
	When binding.Cond `json:"when"`
	// Held counts the site's occurrences it held in; Reach those of them
	// where the agent made the lookup before its next write.
	Held  Count `json:"held"`
	Reach Count `json:"reach"`
}

// PWhen returns P(reach) in fold f given whether the predicate held, of a
// lookup reached reach times at a site of count n, smoothed by a half on
// each side, so it is never 0 or 1.
func (p *Predicate) PWhen(f int, held bool, reach, n int) float64 {
	h, r := p.Held.For(f), p.Reach.For(f)
	if !held {
		h, r = n-h, reach-r
	}
	return (float64(r) + 0.5) / (float64(h) + 1)
}

// MeanBytes returns the mean size of the lookup's results in fold f, 0 when
// unknown.
func (l *Lookup) MeanBytes(f int) float64 {
	if l.Answered == nil || l.Bytes == nil {
		return 0
	}
	n := l.Answered.For(f)
	if n == 0 {
		return 0
	}
	return float64(l.Bytes.For(f)) / float64(n)
}

// Bound is one binding of every argument of a lookup, with how often it
// reproduced the agent's actual arguments (every call it makes was one the
// agent made before its next write).
type Bound struct {
	Args    map[string]binding.Expr `json:"args"`
	Matched Count                   `json:"matched"`
	// Calls and Used are kept for a fan-out, which the agent often uses in
	// part (the reservations it checks until it finds the one): over the
	// occurrences where the lookup was reached and the binding bound, the
	// calls it would have made, and how many of them the agent made.
	// P(binding) of a fan-out is Used/Calls, per call.
	Calls *Count `json:"calls,omitempty"`
	Used  *Count `json:"used,omitempty"`
	// Narrow counts a fan-out over every element narrowed to the elements
	// the customer named, where that bound (narrow.go); nil for none.
	Narrow *Narrow `json:"narrow,omitempty"`

	// text is Args as the flow log writes them, made once by Parse (when
	// texted) for every session that serves the flow; never written after.
	text   map[string]string
	texted bool
}

// argText returns the binding's expressions as strings.
func (b *Bound) argText() map[string]string {
	var m map[string]string // nil for a binding without arguments: logged as null, as it always was
	if b.Args != nil {
		m = make(map[string]string, len(b.Args))
	}
	for k, e := range b.Args {
		m[k] = e.String()
	}
	return m
}

// FanOut reports whether the binding fans out (some argument has [*]).
func (b *Bound) FanOut() bool {
	for _, x := range b.Args {
		if x.FanOut() {
			return true
		}
	}
	return false
}

// Support returns how many of the agent's calls the binding reproduced in
// fold f: Used for a fan-out that keeps it, else Matched.
func (b *Bound) Support(f int) int {
	if b.Used != nil {
		return b.Used.For(f)
	}
	return b.Matched.For(f)
}

// Value returns what the binding earned in fold f, as the decider prices
// an offer (BindingValue): its calls the agent made, less the others at a
// detour's cost, the threshold (the ratio of a detour's cost to a turn's
// value) scaled by scale, the lookup's result size in detours
// (MeanBytes/DetourBytes, at least 1).
func (b *Bound) Value(f int, threshold, scale float64) float64 {
	calls := b.Matched.For(f)
	if b.Calls != nil && b.Used != nil {
		calls = b.Calls.For(f)
	}
	return BindingValue(b.Support(f), calls, threshold, scale)
}

// BindingValue is what a binding earns, in turns: hits of its calls, each
// a turn saved, less the detours of the others, each costing threshold ×
// scale of a turn. It ranks a lookup's bindings: the element the customer
// named, right nearly every time, earns more than every element, right a
// third of the time, though that reproduces more of the agent's calls.
func BindingValue(hits, calls int, threshold, scale float64) float64 {
	return float64(hits) - float64(calls-hits)*threshold*scale
}

// PBinding returns P(binding matched) in fold f for a lookup reached reach
// times: Used/Calls for a fan-out that keeps them, else Matched/reach.
func (b *Bound) PBinding(f, reach int) float64 {
	if b.Calls != nil && b.Used != nil {
		if c := b.Calls.For(f); c > 0 {
			return float64(b.Used.For(f)) / float64(c)
		}
		return 0
	}
	if reach <= 0 {
		return 0
	}
	return float64(b.Matched.For(f)) / float64(reach)
}

// Count is a count in total and per fold: N is the total and Folds[f] the
// part of it from tasks of fold f (absent without folds). Served for a task
// of fold f, the count is N − Folds[f], so no task is served by counts it
// contributed.
type Count struct {
	N     int   `json:"n"`
	Folds []int `json:"folds,omitempty"`
}

// For returns the count served to a task of fold f; f < 0 gives the total.
func (c Count) For(f int) int {
	if f < 0 || f >= len(c.Folds) {
		return c.N
	}
	return c.N - c.Folds[f]
}

// Add adds one occurrence from fold f (f < 0, or a count without folds:
// the total only).
func (c *Count) Add(f int) {
	c.N++
	if f >= 0 && f < len(c.Folds) {
		c.Folds[f]++
	}
}

// AddN adds n occurrences from fold f.
func (c *Count) AddN(f, n int) {
	c.N += n
	if f >= 0 && f < len(c.Folds) {
		c.Folds[f] += n
	}
}

// NewCount returns a zero count over k folds.
func NewCount(k int) Count {
	if k <= 1 {
		return Count{}
	}
	return Count{Folds: make([]int, k)}
}

// FoldOf returns the fold of a task key (a τ² task id, else a host session)
// among k folds, or -1 when k ≤ 1: FNV-1a of the key, modulo k. learn and the
// proxy (--task-id) agree on it.
func FoldOf(key string, k int) int {
	if k <= 1 {
		return -1
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(h.Sum64() % uint64(k))
}

// TaskKey returns the key an episode's counts are folded by: its τ² task id
// when known, else its host session, else its id.
func TaskKey(ep *episode.Episode) string {
	switch {
	case ep.TaskID != "":
		return ep.TaskID
	case ep.HostSession != "":
		return ep.HostSession
	}
	return ep.ID
}

// BareName returns the name a tool is called by on its own server: the
// flow's name without its "server::" qualification.
func (f *Flow) BareName(tool string) string {
	if t, ok := f.Tools[tool]; ok && t.Server != "" {
		return strings.TrimPrefix(tool, t.Server+"::")
	}
	return tool
}

// Marshal encodes the flow as JSON with a final newline, indented, with
// small values (a count, a binding, a contract) kept on one line. Maps are
// written with sorted keys and slices in their (sorted) order, so the same
// Flow always gives the same bytes.
func (f *Flow) Marshal() ([]byte, error) {
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f.normalized()); err != nil {
		return nil, fmt.Errorf("encoding flow: %w", err)
	}
	var buf bytes.Buffer
	if err := indentJSON(&buf, bytes.TrimSuffix(compact.Bytes(), []byte("\n")), 0); err != nil {
		return nil, fmt.Errorf("encoding flow: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// normalized returns a shallow copy whose nil lists and maps are empty, so
// that they encode as [] and {}, never null.
func (f *Flow) normalized() *Flow {
	g := *f
	if g.Servers == nil {
		g.Servers = []string{}
	}
	if g.Learned.Sources == nil {
		g.Learned.Sources = []string{}
	}
	if g.Tools == nil {
		g.Tools = map[string]Tool{}
	}
	g.Sites = slices.Clone(f.Sites)
	if g.Sites == nil {
		g.Sites = []Site{}
	}
	for i := range g.Sites {
		s := &g.Sites[i]
		s.Lookups = slices.Clone(s.Lookups)
		if s.Lookups == nil {
			s.Lookups = []Lookup{}
		}
		for j := range s.Lookups {
			if s.Lookups[j].Bindings == nil {
				s.Lookups[j].Bindings = []Bound{}
			}
		}
	}
	return &g
}

// FieldError is a flow file that does not hold a valid flow: File and the
// JSON path of the Field that is wrong, as "file: field: message".
type FieldError struct {
	File  string
	Field string
	Err   error
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *FieldError) Unwrap() error { return e.Err }

// Load reads and validates the flow file at path.
func Load(path string) (*Flow, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading flow: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes and validates a flow; name (the file) prefixes errors.
// Unknown members are refused, so a typo is not silently ignored.
func Parse(data []byte, name string) (*Flow, error) {
	var probe struct {
		Version *int `json:"hoist_flow"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, &FieldError{File: name, Err: fmt.Errorf("not a JSON object: %w", err)}
	}
	if probe.Version == nil {
		return nil, &FieldError{File: name, Field: "hoist_flow", Err: errors.New("missing: not a flow file")}
	}
	if *probe.Version < OldestVersion || *probe.Version > Version {
		return nil, &FieldError{File: name, Field: "hoist_flow", Err: fmt.Errorf("version %d, this hoist reads versions %d to %d", *probe.Version, OldestVersion, Version)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f Flow
	if err := dec.Decode(&f); err != nil {
		var se *binding.SyntaxError
		if errors.As(err, &se) {
			return nil, &FieldError{File: name, Field: "binding", Err: err}
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, &FieldError{File: name, Field: te.Field, Err: fmt.Errorf("want %s, got %s", te.Type, te.Value)}
		}
		return nil, &FieldError{File: name, Err: err}
	}
	if f.Arbiter != nil && f.Arbiter.none {
		f.Arbiter = nil // version 1's "arbiter": false
	}
	f.Version = Version // read as this version: what it lacks is absent
	if err := f.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			fe.File = name
		}
		return nil, err
	}
	for si := range f.Sites {
		for li := range f.Sites[si].Lookups {
			for bi := range f.Sites[si].Lookups[li].Bindings {
				b := &f.Sites[si].Lookups[li].Bindings[bi]
				b.text, b.texted = b.argText(), true
			}
		}
	}
	return &f, nil
}

// Validate checks what the JSON Schema cannot: counts in range and folds of
// the right length, sites and lookups sorted and unique, lookups only of
// known read tools, bindings of the lookup's arguments.
func (f *Flow) Validate() error {
	bad := func(field string, format string, args ...any) error {
		return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
	}
	if f.Version != Version {
		return bad("hoist_flow", "version %d, want %d", f.Version, Version)
	}
	if f.Folds < 0 || f.Folds > 1000 {
		return bad("folds", "%d out of range 0..1000", f.Folds)
	}
	if f.MinSupport < 0 {
		return bad("min_support", "negative")
	}
	k := f.Folds
	checkCount := func(field string, c Count, max int) error {
		if c.N < 0 || c.N > max {
			return bad(field+".n", "%d out of range 0..%d", c.N, max)
		}
		if k <= 1 {
			if len(c.Folds) != 0 {
				return bad(field+".folds", "given without folds")
			}
			return nil
		}
		if len(c.Folds) != k {
			return bad(field+".folds", "%d folds, want %d", len(c.Folds), k)
		}
		sum := 0
		for _, x := range c.Folds {
			if x < 0 {
				return bad(field+".folds", "negative count")
			}
			sum += x
		}
		if sum != c.N {
			return bad(field+".folds", "sum to %d, want n = %d", sum, c.N)
		}
		return nil
	}
	for name, t := range f.Tools {
		switch t.Kind {
		case episode.Read, episode.Write, episode.Generic:
		default:
			return bad("tools."+name+".kind", "%q: want read, write or generic", t.Kind)
		}
	}
	for i, s := range f.Sites {
		field := fmt.Sprintf("sites[%d]", i)
		if s.Tool == "" {
			return bad(field+".tool", "empty")
		}
		if i > 0 {
			p := f.Sites[i-1]
			if p.Tool > s.Tool || p.Tool == s.Tool && (p.Failed || !s.Failed) {
				return bad(field, "sites not sorted by tool, then failed, or repeated")
			}
		}
		if err := checkCount(field+".count", s.Count, 1<<40); err != nil {
			return err
		}
		for j, l := range s.Lookups {
			lf := fmt.Sprintf("%s.lookups[%d]", field, j)
			if j > 0 && s.Lookups[j-1].Tool >= l.Tool {
				return bad(lf, "lookups not sorted by tool, or repeated")
			}
			t, ok := f.Tools[l.Tool]
			if !ok {
				return bad(lf+".tool", "%q is not in tools", l.Tool)
			}
			if t.Kind != episode.Read {
				return bad(lf+".tool", "%q is a %s tool: a flow looks up only read tools", l.Tool, t.Kind)
			}
			if err := checkCount(lf+".reach", l.Reach, s.Count.N); err != nil {
				return err
			}
			if err := checkCount(lf+".habit", l.Habit, s.Count.N); err != nil {
				return err
			}
			for m, b := range l.Bindings {
				bf := fmt.Sprintf("%s.bindings[%d]", lf, m)
				if err := checkCount(bf+".matched", b.Matched, l.Reach.N); err != nil {
					return err
				}
				if (b.Calls == nil) != (b.Used == nil) {
					return bad(bf, "calls and used come together")
				}
				if b.Calls != nil {
					if err := checkCount(bf+".calls", *b.Calls, 1<<40); err != nil {
						return err
					}
					if err := checkCount(bf+".used", *b.Used, b.Calls.N); err != nil {
						return err
					}
				}
				if b.Narrow != nil {
					if err := b.Narrow.validate(bf+".narrow", checkCount); err != nil {
						return err
					}
				}
				for arg := range b.Args {
					if t.Input != nil {
						if _, ok := t.Input[arg]; !ok {
							return bad(bf+".args."+arg, "not an argument of %s's pinned input contract", l.Tool)
						}
					}
				}
			}
			if (l.Answered == nil) != (l.Bytes == nil) {
				return bad(lf, "answered and bytes come together")
			}
			if l.Answered != nil {
				if err := checkCount(lf+".answered", *l.Answered, 1<<40); err != nil {
					return err
				}
				if err := checkCount(lf+".bytes", *l.Bytes, 1<<62); err != nil {
					return err
				}
			}
			for ci, c := range l.Cues {
				cf := fmt.Sprintf("%s.cues[%d]", lf, ci)
				if strings.TrimSpace(c.Word) == "" {
					return bad(cf+".word", "missing")
				}
				if c.By != "" && c.By != CueByAgent {
					return bad(cf+".by", "%q: want %q or none (the customer's)", c.By, CueByAgent)
				}
				if c.By == CueByAgent && !f.Learned.AgentWords {
					return bad(cf+".by", "a word the agent said, in a flow not learned with the agent's words (learned.agent_words), which serving does not hear")
				}
				if err := checkCount(cf+".said", c.Said, s.Count.N); err != nil {
					return err
				}
				if err := checkCount(cf+".reach", c.Reach, min(c.Said.N, l.Reach.N)); err != nil {
					return err
				}
				if err := checkCount(cf+".tasks", c.Tasks, c.Said.N); err != nil {
					return err
				}
			}
			if p := l.Predicate; p != nil {
				pf := lf + ".predicate"
				if p.When.String() == "" {
					return bad(pf+".when", "missing")
				}
				if _, agent := p.When.Word(); agent && !f.Learned.AgentWords {
					return bad(pf+".when", "%s, in a flow not learned with the agent's words (learned.agent_words), which serving does not hear", p.When)
				}
				if err := checkCount(pf+".held", p.Held, s.Count.N); err != nil {
					return err
				}
				if err := checkCount(pf+".reach", p.Reach, min(p.Held.N, l.Reach.N)); err != nil {
					return err
				}
			}
		}
	}
	if !slices.IsSorted(f.Servers) {
		return bad("servers", "not sorted")
	}
	if f.Arbiter != nil {
		if err := f.Arbiter.validate(k); err != nil {
			return err
		}
		for i := range f.Arbiter.HeldOut {
			h := &f.Arbiter.HeldOut[i]
			field := fmt.Sprintf("arbiter.held_out[%d]", i)
			if i > 0 {
				if CompareHeldOut(f.Arbiter.HeldOut[i-1].Key(), h.Key()) >= 0 {
					return bad(field, "not sorted by site, failed, lookup, binding, then narrowed, or repeated")
				}
			}
			if err := h.validate(field, checkCount); err != nil {
				return err
			}
			if !f.hasBinding(h.Key()) {
				return bad(field, "site %s (failed %v), lookup %s, binding %d: no such binding", h.Site, h.Failed, h.Lookup, h.Binding)
			}
		}
	}
	return nil
}

// hasBinding reports whether the flow has the binding k names.
func (f *Flow) hasBinding(k HeldOutKey) bool {
	s := f.site(k.Site, k.Failed)
	if s == nil {
		return false
	}
	for i := range s.Lookups {
		if s.Lookups[i].Tool == k.Lookup {
			return k.Binding < len(s.Lookups[i].Bindings)
		}
	}
	return false
}

// site returns the site of tool and outcome, or nil.
func (f *Flow) site(tool string, failed bool) *Site {
	i, ok := slices.BinarySearchFunc(f.Sites, Site{Tool: tool, Failed: failed}, func(a, b Site) int {
		if c := strings.Compare(a.Tool, b.Tool); c != 0 {
			return c
		}
		switch {
		case a.Failed == b.Failed:
			return 0
		case !a.Failed:
			return -1
		}
		return 1
	})
	if !ok {
		return nil
	}
	return &f.Sites[i]
}
