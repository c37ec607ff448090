package learn

// Learning as a combiner (docs/scale.md): Count turns episodes into a
// Learner, the partial counts of a shard; Merge adds Learners, in any
// grouping and order; Flow turns the sum into a flow. A shard's partial
// travels in its flow file, as the "shard" member hoist learn --shard
// writes, so that hoist flow merge adds the partials, not the flows, and
// writes what one learn over every shard's episodes writes, byte for byte.
// The arbiter is fitted on a training table (table.go) that each shard
// replays against the merged counts.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// shardJSON is a Learner as a flow file's "shard" member: every count,
// untrimmed (all bindings, all conditions of few-valued paths), in a
// canonical order, so that the same episodes give the same bytes however
// they were split.
type shardJSON struct {
	Options  shardOptions        `json:"options"`
	Episodes int                 `json:"episodes"`
	Tasks    []string            `json:"tasks"`
	Sources  []string            `json:"sources"`
	Latest   string              `json:"latest,omitempty"`
	Digest   string              `json:"digest"`
	Servers  []string            `json:"servers"`
	Tools    map[string]toolJSON `json:"tools"`
	Sites    []siteJSON          `json:"sites"`
}

type shardOptions struct {
	Domain         string `json:"domain"`
	Folds          int    `json:"folds"`
	MinSupport     int    `json:"min_support"`
	MaxBindings    int    `json:"max_bindings"`
	HabitOnly      bool   `json:"habit_only,omitempty"`
	KeepReferences bool   `json:"keep_references,omitempty"`
	WordDates      bool   `json:"word_dates,omitempty"`
	Rest           bool   `json:"rest,omitempty"`
	Cues           bool   `json:"cues,omitempty"`
	AgentWords     bool   `json:"agent_words,omitempty"`
	// ListConditions says the shard counted conditions on lists that are
	// not empty (Options.NoListConditions unset); a shard written before
	// them reads as false, and is refused beside one that counted them.
	ListConditions bool `json:"list_conditions,omitempty"`
}

type toolJSON struct {
	Server    string         `json:"server"`
	Kinds     map[string]int `json:"kinds"`
	Contracts map[string]int `json:"contracts,omitempty"`
}

type siteJSON struct {
	Tool   string                `json:"tool"`
	Failed bool                  `json:"failed,omitempty"`
	Count  flow.Count            `json:"count"`
	Values map[string][]string   `json:"values,omitempty"`
	Many   []string              `json:"many,omitempty"`
	Conds  map[string]flow.Count `json:"conds,omitempty"`
	// SaidIn is the tasks each said condition held in (with cues).
	SaidIn  map[string][]string `json:"said_in,omitempty"`
	Lookups []lookupJSON        `json:"lookups"`
}

type lookupJSON struct {
	Tool     string                `json:"tool"`
	Reach    flow.Count            `json:"reach"`
	Habit    flow.Count            `json:"habit"`
	Answered flow.Count            `json:"answered"`
	Bytes    flow.Count            `json:"bytes"`
	When     map[string]flow.Count `json:"when,omitempty"`
	Tuples   []tupleJSON           `json:"tuples"`
}

type tupleJSON struct {
	Args    []argJSON  `json:"args"`
	Tasks   []string   `json:"tasks"`
	Matched flow.Count `json:"matched"`
	Calls   flow.Count `json:"calls"`
	Used    flow.Count `json:"used"`
	// Narrow is the narrowed fan-out's calls, used, and the whole's
	// calls and used where it bound (narrow.go).
	Narrow []flow.Count `json:"narrow,omitempty"`
}

type argJSON struct {
	Name   string `json:"name"`
	Expr   string `json:"expr"`
	First  string `json:"first"`
	Varied bool   `json:"varied,omitempty"`
}

func (l *Learner) options() shardOptions {
	return shardOptions{Domain: l.opt.Domain, Folds: l.opt.Folds, MinSupport: l.opt.MinSupport, MaxBindings: l.opt.MaxBindings,
		HabitOnly: l.opt.HabitOnly, KeepReferences: l.opt.KeepReferences, WordDates: l.opt.WordDates, Rest: l.opt.Rest, Cues: l.opt.Cues, AgentWords: l.opt.AgentWords,
		ListConditions: !l.opt.NoListConditions}
}

// Shard returns the Learner's partial counts as JSON, the "shard" member of
// the flow file hoist learn --shard writes.
func (l *Learner) Shard() (json.RawMessage, error) {
	s := shardJSON{
		Options:  l.options(),
		Episodes: l.episodes,
		Tasks:    sortedKeys(l.tasks),
		Sources:  sortedKeys(l.sources),
		Digest:   flow.DigestPrefix + hex.EncodeToString(l.digest[:]),
		Servers:  sortedKeys(l.servers),
		Tools:    map[string]toolJSON{},
		Sites:    []siteJSON{},
	}
	if !l.latest.IsZero() {
		s.Latest = l.latest.UTC().Format(time.RFC3339Nano)
	}
	for name, ta := range l.tools {
		t := toolJSON{Server: ta.server, Kinds: map[string]int{}, Contracts: ta.contracts}
		for k, n := range ta.kinds {
			t.Kinds[string(k)] = n
		}
		s.Tools[name] = t
	}
	for sk, sa := range l.sites {
		sj := siteJSON{Tool: sk.tool, Failed: sk.failed, Count: sa.count, Conds: map[string]flow.Count{}, Values: map[string][]string{}, Lookups: []lookupJSON{}}
		sj.Many = sortedKeys(sa.many)
		for path, vs := range sa.values {
			sj.Values[path] = sortedKeys(vs)
		}
		for c, n := range sa.conds {
			sj.Conds[c] = *n
		}
		for c, ts := range sa.saidIn {
			if sj.SaidIn == nil {
				sj.SaidIn = map[string][]string{}
			}
			sj.SaidIn[c] = sortedKeys(ts)
		}
		for tool, la := range sa.lookups {
			lj := lookupJSON{Tool: tool, Reach: la.reach, Habit: la.habit, Answered: la.answered, Bytes: la.bytes, When: map[string]flow.Count{}, Tuples: []tupleJSON{}}
			for c, n := range la.when {
				if sa.conds[c] != nil { // a condition of a path of many values counts nothing
					lj.When[c] = *n
				}
			}
			for _, ta := range la.tuples {
				tj := tupleJSON{Args: []argJSON{}, Tasks: sortedKeys(ta.tasks), Matched: ta.matched, Calls: ta.calls, Used: ta.used}
				if n := ta.narrow; n != nil {
					tj.Narrow = []flow.Count{n.calls, n.used, n.allCalls, n.allUsed}
				}
				for _, a := range ta.args {
					tj.Args = append(tj.Args, argJSON{Name: a.name, Expr: a.expr, First: a.first, Varied: a.varied})
				}
				lj.Tuples = append(lj.Tuples, tj)
			}
			slices.SortFunc(lj.Tuples, func(a, b tupleJSON) int { return strings.Compare(tupleKey(a.Args), tupleKey(b.Args)) })
			sj.Lookups = append(sj.Lookups, lj)
		}
		slices.SortFunc(sj.Lookups, func(a, b lookupJSON) int { return strings.Compare(a.Tool, b.Tool) })
		s.Sites = append(s.Sites, sj)
	}
	slices.SortFunc(s.Sites, func(a, b siteJSON) int {
		if c := strings.Compare(a.Tool, b.Tool); c != 0 {
			return c
		}
		return compareBool(a.Failed, b.Failed)
	})
	return json.Marshal(s)
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// tupleKey is the key a tuple is counted under (countBindings).
func tupleKey(args []argJSON) string {
	var b strings.Builder
	for _, a := range args {
		b.WriteString(a.Name)
		b.WriteByte('=')
		b.WriteString(a.Expr)
		b.WriteByte(0)
	}
	return b.String()
}

// FromShard reads the partial counts a flow file's "shard" member holds.
// Errors name the member that is wrong, as "shard.sites[3].count".
func FromShard(raw json.RawMessage) (*Learner, error) {
	var s shardJSON
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, &flow.FieldError{Field: "shard." + te.Field, Err: fmt.Errorf("want %s, got %s", te.Type, te.Value)}
		}
		return nil, &flow.FieldError{Field: "shard", Err: err}
	}
	bad := func(field, format string, args ...any) error {
		return &flow.FieldError{Field: "shard." + field, Err: fmt.Errorf(format, args...)}
	}
	o := s.Options
	if o.Folds < 1 || o.Folds > 1000 || o.MinSupport < 1 || o.MaxBindings < 1 {
		return nil, bad("options", "folds %d, min_support %d, max_bindings %d: want folds 1 to 1000 and the others at least 1", o.Folds, o.MinSupport, o.MaxBindings)
	}
	l := New(Options{Domain: o.Domain, Folds: o.Folds, MinSupport: o.MinSupport, MaxBindings: o.MaxBindings, HabitOnly: o.HabitOnly, KeepReferences: o.KeepReferences, WordDates: o.WordDates, Rest: o.Rest, Cues: o.Cues, AgentWords: o.AgentWords, NoListConditions: !o.ListConditions})
	l.episodes = s.Episodes
	for _, t := range s.Tasks {
		l.tasks[t] = true
	}
	for _, src := range s.Sources {
		l.sources[src] = true
	}
	for _, sv := range s.Servers {
		l.servers[sv] = true
	}
	if s.Latest != "" {
		t, err := time.Parse(time.RFC3339Nano, s.Latest)
		if err != nil {
			return nil, bad("latest", "%v", err)
		}
		l.latest = t
	}
	d, err := flow.ParseDigest(s.Digest)
	if err != nil {
		return nil, bad("digest", "%v", err)
	}
	l.digest = d
	for name, t := range s.Tools {
		ta := &toolAcc{server: t.Server, kinds: map[episode.Kind]int{}, contracts: map[string]int{}}
		for k, n := range t.Kinds {
			ta.kinds[episode.Kind(k)] = n
		}
		maps.Copy(ta.contracts, t.Contracts)
		l.tools[name] = ta
	}
	count := func(field string, c flow.Count) (flow.Count, error) {
		if len(c.Folds) != len(flow.NewCount(o.Folds).Folds) {
			return c, bad(field, "%d folds, want %d", len(c.Folds), o.Folds)
		}
		return flow.Count{N: c.N, Folds: slices.Clone(c.Folds)}, nil
	}
	for i, sj := range s.Sites {
		at := fmt.Sprintf("sites[%d]", i)
		sa := &siteAcc{lookups: map[string]*lookupAcc{}, conds: map[string]*flow.Count{}, values: map[string]map[string]bool{}, many: map[string]bool{}}
		if sa.count, err = count(at+".count", sj.Count); err != nil {
			return nil, err
		}
		for _, p := range sj.Many {
			sa.many[p] = true
		}
		for p, vs := range sj.Values {
			sa.values[p] = map[string]bool{}
			for _, v := range vs {
				sa.values[p][v] = true
			}
		}
		for c, n := range sj.Conds {
			n, err := count(at+".conds", n)
			if err != nil {
				return nil, err
			}
			sa.conds[c] = &n
		}
		for c, ts := range sj.SaidIn {
			for _, t := range ts {
				sa.noteSaid(c, t)
			}
		}
		for j, lj := range sj.Lookups {
			at := fmt.Sprintf("%s.lookups[%d]", at, j)
			la := &lookupAcc{tuples: map[string]*tupleAcc{}, when: map[string]*flow.Count{}}
			for _, c := range []struct {
				name string
				dst  *flow.Count
				src  flow.Count
			}{{"reach", &la.reach, lj.Reach}, {"habit", &la.habit, lj.Habit}, {"answered", &la.answered, lj.Answered}, {"bytes", &la.bytes, lj.Bytes}} {
				if *c.dst, err = count(at+"."+c.name, c.src); err != nil {
					return nil, err
				}
			}
			for c, n := range lj.When {
				n, err := count(at+".when", n)
				if err != nil {
					return nil, err
				}
				la.when[c] = &n
			}
			for k, tj := range lj.Tuples {
				at := fmt.Sprintf("%s.tuples[%d]", at, k)
				ta := &tupleAcc{}
				for _, c := range []struct {
					name string
					dst  *flow.Count
					src  flow.Count
				}{{"matched", &ta.matched, tj.Matched}, {"calls", &ta.calls, tj.Calls}, {"used", &ta.used, tj.Used}} {
					if *c.dst, err = count(at+"."+c.name, c.src); err != nil {
						return nil, err
					}
				}
				if len(tj.Narrow) != 0 {
					if len(tj.Narrow) != 4 {
						return nil, bad(at+".narrow", "%d counts, want 4: calls, used, all_calls, all_used", len(tj.Narrow))
					}
					ta.narrow = &narrowAcc{}
					for i, dst := range []*flow.Count{&ta.narrow.calls, &ta.narrow.used, &ta.narrow.allCalls, &ta.narrow.allUsed} {
						if *dst, err = count(at+".narrow", tj.Narrow[i]); err != nil {
							return nil, err
						}
					}
				}
				for _, a := range tj.Args {
					b, err := binding.Parse(a.Expr)
					if err != nil {
						return nil, bad(at+".args", "%v", err)
					}
					if _, err := binding.Parse(a.First); err != nil && !a.Varied {
						return nil, bad(at+".args", "first %q: %v", a.First, err)
					}
					l.bindings[a.Expr] = b
					ta.args = append(ta.args, argExpr{name: a.Name, expr: a.Expr, first: a.First, varied: a.Varied})
					ta.fan = ta.fan || b.FanOut()
					ta.constant = ta.constant || !strings.HasPrefix(a.Expr, "$") && !strings.HasPrefix(a.Expr, "[$")
				}
				for _, t := range tj.Tasks {
					ta.addTask(t, o.MinSupport)
				}
				la.tuples[tupleKey(tj.Args)] = ta
			}
			sa.lookups[lj.Tool] = la
		}
		l.sites[siteKey{sj.Tool, sj.Failed}] = sa
	}
	return l, nil
}

// Merge adds o's partial counts and provenance to l, as if l had counted
// o's episodes too. It is associative and commutative: the flow of a sum
// does not depend on how the episodes were split or grouped. o must not be
// used after. The two must have been learned with the same options.
func (l *Learner) Merge(o *Learner) error {
	if a, b := l.options(), o.options(); a != b {
		return optionsDiffer(b, a)
	}
	l.merge(o)
	l.episodes += o.episodes
	for t := range o.tasks {
		l.tasks[t] = true
	}
	for s := range o.sources {
		l.sources[s] = true
	}
	if o.latest.After(l.latest) {
		l.latest = o.latest
	}
	flow.AddDigest(&l.digest, o.digest[:])
	return nil
}

// optionsDiffer names the first option two partials differ in.
func optionsDiffer(got, want shardOptions) error {
	field, g, w := "", any(nil), any(nil)
	switch {
	case got.Domain != want.Domain:
		field, g, w = "domain", fmt.Sprintf("%q", got.Domain), fmt.Sprintf("%q", want.Domain)
	case got.Folds != want.Folds:
		field, g, w = "folds", got.Folds, want.Folds
	case got.MinSupport != want.MinSupport:
		field, g, w = "min_support", got.MinSupport, want.MinSupport
	case got.MaxBindings != want.MaxBindings:
		field, g, w = "max_bindings", got.MaxBindings, want.MaxBindings
	case got.HabitOnly != want.HabitOnly:
		field, g, w = "habit_only", got.HabitOnly, want.HabitOnly
	case got.WordDates != want.WordDates:
		field, g, w = "word_dates", got.WordDates, want.WordDates
	case got.Rest != want.Rest:
		field, g, w = "rest", got.Rest, want.Rest
	case got.Cues != want.Cues:
		field, g, w = "cues", got.Cues, want.Cues
	case got.AgentWords != want.AgentWords:
		field, g, w = "agent_words", got.AgentWords, want.AgentWords
	case got.ListConditions != want.ListConditions:
		field, g, w = "list_conditions", got.ListConditions, want.ListConditions
	default:
		field, g, w = "keep_references", got.KeepReferences, want.KeepReferences
	}
	return &flow.FieldError{Field: "shard.counts.options." + field, Err: fmt.Errorf("%v, the first flow has %v", g, w)}
}
