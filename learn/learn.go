// Package learn turns episodes into a flow (issue 4, point 2): for each site
// (the agent's call that just returned, by tool and outcome) it counts the
// read tools of the same server the agent looked up before its next write
// (reach) and in its next LLM turn (habit), and where each of their
// arguments came from (binding expressions, see binding.Parse), with how
// often each binding reproduced the agent's own arguments. Counts are split
// into folds by task, so that a task is never served by counts learned from
// itself. Learning reads episodes through episode.Source, never the store.
package learn

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/jsontext"
)

// Defaults of Options.
const (
	DefaultFolds       = 5
	DefaultMinSupport  = 3
	DefaultMaxBindings = 3
)

// Limits that keep learning linear on odd data.
const (
	maxRefsPerArg   = 6  // reference candidates per argument and occurrence
	maxTuples       = 64 // binding tuples tried per lookup and occurrence
	maxFanOutValues = 64 // values a fan-out may give and still match
	maxConds        = 24 // conditions a site's result offers per occurrence
	maxSaidConds    = 64 // words said a site's occurrence offers as conditions (Options.SaidConditions)
)

// Options tune learning.
type Options struct {
	// Domain names the flow's domain; episodes of another domain are still
	// learned from (the caller filters).
	Domain string
	// Folds is K (0: DefaultFolds; 1: no folds).
	Folds int
	// MinSupport is the least matches a binding needs to be kept, and the
	// least count a site needs to be served (0: DefaultMinSupport).
	MinSupport int
	// MaxBindings is how many bindings a lookup keeps, best first (0:
	// DefaultMaxBindings).
	MaxBindings int
	// Workers is how many goroutines FromSource counts on (0: GOMAXPROCS).
	Workers int
	// HabitOnly marks the flow as learned without an arbiter (learn
	// --habit-only). No flow of this version has one, so it changes only the
	// provenance.
	HabitOnly bool
	// KeepReferences writes a reference that met one value wherever it
	// matched as the reference, not as that value (the chance rule,
	// beatChance). Whether a reference varied is known only over all the
	// episodes, so flows learned from shards to be merged into the flow of
	// the whole need it off (docs/scale.md).
	KeepReferences bool
	// Positions learns [said#] bindings, an element the customer picked by
	// its position ("my most recent reservation"). Off: on the τ²-bench
	// training tasks it saved no turn and cost learn time (docs/flow.md,
	// "What each lever earned"; flowbench -with position).
	Positions bool
	// Descriptions learns [said~] bindings, the elements the customer
	// described by a value they hold ("the lamp" for an item named "Desk
	// Lamp").
	Descriptions bool
	// WordDates counts a date said in words as said (binding.Said's
	// WordDates), and marks the flow so (learned.word_dates), so that it is
	// served the same way. Off: on the τ²-bench training tasks it saved no
	// turn (flowbench -with date).
	WordDates bool
	// SaidConditions learns predicates on what the customer said (said
	// "word": a booking's "nonstop", a complaint's "delayed"), beside those
	// on the site's result, of the first maxSaidConds words said.
	SaidConditions bool
	// Cues learns, for each lookup, the words the customer said before
	// its site in whose occurrences the agent made the lookup much more
	// often than at the site overall (flow.Lookup.Cues, learned.cues):
	// served, a lookup with cues is not offered where none of them was
	// said (a product's details where the customer asked to return, not
	// to exchange). Of the first maxSaidConds words said.
	Cues bool
	// AgentWords learns from what the agent said since the customer's
	// last message (the assistant's lines of the conversation; in τ²-bench
	// and in logs recorded with --context, the text that goes with a call
	// comes before it): its words before a site are conditions, agent said
	// "word", for predicates and, with Cues, for cues, named as the
	// agent's (flow.Cue.By); the flow is marked so (learned.agent_words)
	// and served so. Of the first maxSaidConds words the agent said in that
	// window. Off: on the τ²-bench training tasks it moves retail not at
	// all, whose agents never speak before a call, and airline by a
	// turn or two either way (docs/flow.md, "What each lever earned";
	// flowbench -with agentwords).
	AgentWords bool
	// NoListConditions learns no condition on whether a list of the
	// site's result is empty ($result, $result.orders: a list that is
	// not), only on its scalars: the ablation of those conditions, which
	// tell, say, the one-stop search the agent makes after a direct search
	// that found nothing (docs/flow.md, "What each lever earned"; flowbench
	// -ablate lists).
	NoListConditions bool
	// Rest serves a fan-out over a list of a site's result
	// ($result.reservations[*]) after the agent's first read of one
	// element, where the rest of it ($last[site].reservations[*], less
	// what was read) earns more on held-out tasks than the whole fan-out
	// did at the site, and marks the flow so (learned.rest): its fit
	// counts the rest's offers, and it is served so too.
	Rest bool
}

// Learner accumulates counts from episodes; Flow returns the flow so far.
// A Learner is not safe for concurrent use.
type Learner struct {
	opt      Options
	k        int
	sites    map[siteKey]*siteAcc
	tools    map[string]*toolAcc
	servers  map[string]bool
	sources  map[string]bool
	tasks    map[string]bool
	episodes int
	latest   time.Time
	digest   [sha256.Size]byte       // the sum of the episodes' digests (flow.AddDigest)
	bindings map[string]binding.Expr // parsed expressions, by text
	contract map[string]string       // listed inputSchema → canonical contract JSON ("" for none)
}

type siteKey struct {
	tool   string
	failed bool
}

type siteAcc struct {
	count   flow.Count
	lookups map[string]*lookupAcc
	// conds counts the occurrences each condition on the site's result
	// held in, by its text; values are the distinct values each path met
	// (up to maxPathValues+1): a path of many values (an id, an address) is
	// no predicate, however well one of its values splits a few tasks.
	conds  map[string]*flow.Count
	values map[string]map[string]bool
	// many holds the paths that met more than maxPathValues values: their
	// conditions are never predicates, so they are not counted. Whether a
	// path has many values does not depend on how the episodes are split.
	many map[string]bool
	// saidIn holds, for each word said before the site (as its said
	// condition), the tasks (flow.TaskKey) it was said in: a cue's support
	// is counted in tasks, so that one task's names, said in its every
	// run, are no cue.
	saidIn map[string]map[string]bool
}

// noteSaid notes that cond, a said condition, held in task's episode.
func (sa *siteAcc) noteSaid(cond, task string) {
	if sa.saidIn == nil {
		sa.saidIn = map[string]map[string]bool{}
	}
	ts := sa.saidIn[cond]
	if ts == nil {
		ts = map[string]bool{}
		sa.saidIn[cond] = ts
	}
	ts[task] = true
}

// maxPathValues is the most distinct values a path of a site's result may
// take and still give predicates: a status or a cabin class, not an id.
const maxPathValues = 8

// noteValue records that a condition's path met its value. A path that
// passes maxPathValues values is marked many, and its conditions' counts
// dropped.
func (sa *siteAcc) noteValue(cond string) {
	path, value, ok := strings.Cut(cond, " == ")
	if !ok || sa.many[path] {
		return
	}
	vs := sa.values[path]
	if vs == nil {
		vs = map[string]bool{}
		sa.values[path] = vs
	}
	vs[value] = true
	if len(vs) > maxPathValues {
		sa.markMany(path)
	}
}

func (sa *siteAcc) markMany(path string) {
	if sa.many == nil {
		sa.many = map[string]bool{}
	}
	sa.many[path] = true
	delete(sa.values, path)
	for c := range sa.conds {
		if p, _, _ := strings.Cut(c, " == "); p == path {
			delete(sa.conds, c)
		}
	}
}

// fewValues reports whether a condition's path takes few enough values.
func (sa *siteAcc) fewValues(cond string) bool {
	path, _, ok := strings.Cut(cond, " == ")
	return !ok || !sa.many[path]
}

type lookupAcc struct {
	reach, habit flow.Count
	tuples       map[string]*tupleAcc
	// answered and bytes are the agent's results of the lookup where it was
	// reached, and their text's length: what a detour would append.
	answered, bytes flow.Count
	// when counts, by condition, the occurrences it held in where the
	// lookup was reached.
	when map[string]*flow.Count
}

type tupleAcc struct {
	args        []argExpr
	fan         bool
	constant    bool            // some argument is a constant
	tasks       map[string]bool // the tasks it matched in, up to MinSupport
	matched     flow.Count
	calls, used flow.Count // a fan-out's calls and those the agent made
	// narrow counts a fan-out over every element ([*]) where narrowed to
	// the elements the customer named it bound (narrow.go).
	narrow *narrowAcc
}

// addTask notes a task the tuple matched in, keeping the m least task keys:
// whatever the order of the episodes, and however they are split, the
// same keys are kept.
func (t *tupleAcc) addTask(task string, m int) {
	if t.tasks[task] {
		return
	}
	if t.tasks == nil {
		t.tasks = map[string]bool{}
	}
	t.tasks[task] = true
	if len(t.tasks) > m {
		most := ""
		for k := range t.tasks {
			most = max(most, k)
		}
		delete(t.tasks, most)
	}
}

// support is how many of the agent's calls the tuple reproduced.
func (t *tupleAcc) support() int {
	if t.fan {
		return t.used.N
	}
	return t.matched.N
}

// argExpr is one argument's binding in a tuple, with the first value the
// agent passed for it where the tuple matched and whether it ever passed
// another: a reference whose value never varied is a constant found by
// coincidence in a result (issue 12: a binding must beat chance).
type argExpr struct {
	name, expr string
	first      string // canonical JSON of the first value
	varied     bool
}

type toolAcc struct {
	server    string
	kinds     map[episode.Kind]int
	contracts map[string]int // canonical contract JSON → episodes
}

// New returns a Learner.
func New(opt Options) *Learner {
	if opt.Folds == 0 {
		opt.Folds = DefaultFolds
	}
	if opt.MinSupport == 0 {
		opt.MinSupport = DefaultMinSupport
	}
	if opt.MaxBindings == 0 {
		opt.MaxBindings = DefaultMaxBindings
	}
	k := opt.Folds
	if k < 1 {
		k = 1
	}
	return &Learner{
		opt:      opt,
		k:        k,
		sites:    map[siteKey]*siteAcc{},
		tools:    map[string]*toolAcc{},
		servers:  map[string]bool{},
		sources:  map[string]bool{},
		tasks:    map[string]bool{},
		bindings: map[string]binding.Expr{},
		contract: map[string]string{},
	}
}

// FromSource learns a flow from every episode src gives for f. Episodes
// are counted on opt.Workers goroutines (0: GOMAXPROCS) while src reads on,
// and the counts merged by addition, so the flow is byte-identical to Add's
// over the same episodes in the same order. FromSource joins its goroutines
// before returning.
func FromSource(ctx context.Context, src episode.Source, f episode.Filter, opt Options) (*flow.Flow, error) {
	l, err := count(ctx, src, f, opt)
	if err != nil {
		return nil, err
	}
	return l.Flow(), nil
}

func count(ctx context.Context, src episode.Source, f episode.Filter, opt Options) (*Learner, error) {
	n := opt.Workers
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	// Any worker takes the next episode: partial counts merge into the
	// same flow however the episodes were split (Merge).
	shards := make([]*Learner, n)
	ch := make(chan *episode.Episode, 64)
	var wg sync.WaitGroup
	for w := range shards {
		shards[w] = New(opt)
		wg.Add(1)
		go func(sh *Learner) {
			defer wg.Done()
			for ep := range ch {
				sh.Add(ep)
			}
		}(shards[w])
	}
	err := src.Episodes(ctx, f, func(ep *episode.Episode) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case ch <- ep:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(ch)
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("reading episodes: %w", err)
	}
	l := shards[0]
	for _, sh := range shards[1:] {
		if err := l.Merge(sh); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// merge adds o's counts (not its provenance: Merge adds both) to l. o
// must not be used after.
func (l *Learner) merge(o *Learner) {
	for sk, osa := range o.sites {
		sa := l.sites[sk]
		if sa == nil {
			l.sites[sk] = osa
			continue
		}
		addCount(&sa.count, osa.count)
		for path := range osa.many {
			if !sa.many[path] {
				sa.markMany(path)
			}
		}
		for path, vs := range osa.values {
			for v := range vs {
				sa.noteValue(path + " == " + v)
			}
		}
		for c, n := range osa.conds {
			if !sa.fewValues(c) {
				continue
			}
			if sa.conds[c] == nil {
				sa.conds[c] = n
			} else {
				addCount(sa.conds[c], *n)
			}
		}
		for c, ts := range osa.saidIn {
			for t := range ts {
				sa.noteSaid(c, t)
			}
		}
		for tool, ola := range osa.lookups {
			la := sa.lookups[tool]
			if la == nil {
				sa.lookups[tool] = ola
				continue
			}
			addCount(&la.reach, ola.reach)
			addCount(&la.habit, ola.habit)
			addCount(&la.answered, ola.answered)
			addCount(&la.bytes, ola.bytes)
			for c, n := range ola.when {
				if la.when[c] == nil {
					la.when[c] = n
				} else {
					addCount(la.when[c], *n)
				}
			}
			for k, ota := range ola.tuples {
				ta := la.tuples[k]
				if ta == nil {
					la.tuples[k] = ota
					continue
				}
				addCount(&ta.matched, ota.matched)
				addCount(&ta.calls, ota.calls)
				addCount(&ta.used, ota.used)
				ta.narrow = addNarrow(ta.narrow, ota.narrow)
				for i := range ta.args {
					a, b := &ta.args[i], ota.args[i]
					a.varied = a.varied || b.varied || a.first != b.first
					a.first = min(a.first, b.first)
				}
				for task := range ota.tasks {
					ta.addTask(task, l.opt.MinSupport)
				}
			}
		}
	}
	for name, ota := range o.tools {
		ta := l.tools[name]
		if ta == nil {
			l.tools[name] = ota
			continue
		}
		ta.server = leastServer(ta.server, ota.server)
		for k, n := range ota.kinds {
			ta.kinds[k] += n
		}
		for c, n := range ota.contracts {
			ta.contracts[c] += n
		}
	}
	for s := range o.servers {
		l.servers[s] = true
	}
	for expr, b := range o.bindings {
		l.bindings[expr] = b
	}
}

func addCount(dst *flow.Count, src flow.Count) {
	dst.N += src.N
	for i := range src.Folds {
		if i < len(dst.Folds) {
			dst.Folds[i] += src.Folds[i]
		}
	}
}

// Episodes returns how many episodes the Learner has seen.
func (l *Learner) Episodes() int { return l.episodes }

// Add learns from one episode.
func (l *Learner) Add(ep *episode.Episode) {
	l.note(ep)
	l.count(ep)
}

// note records an episode's provenance: what must see episodes in order.
func (l *Learner) note(ep *episode.Episode) {
	l.episodes++
	l.tasks[flow.TaskKey(ep)] = true
	if ep.Source != "" {
		l.sources[ep.Source] = true
	}
	if ep.Started.After(l.latest) {
		l.latest = ep.Started
	}
	l.writeDigest(ep)
}

// count adds an episode's counts, which are sums: shards of episodes
// counted apart and merged give the same counts.
func (l *Learner) count(ep *episode.Episode) {
	key := flow.TaskKey(ep)
	fold := flow.FoldOf(key, l.k)
	tools := make(map[string]*episode.Tool, len(ep.Tools))
	for i := range ep.Tools {
		t := &ep.Tools[i]
		tools[t.Name] = t
		l.noteTool(t)
	}
	for _, s := range ep.Servers {
		if s.Name != "" {
			l.servers[s.Name] = true
		}
	}
	calls := ep.Calls()
	kind := func(c *episode.Call) episode.Kind {
		if t := tools[c.Tool]; t != nil {
			return t.Kind
		}
		return episode.Generic
	}
	for _, c := range calls {
		if _, ok := tools[c.Tool]; !ok {
			l.noteTool(&episode.Tool{Name: c.Tool, Server: c.Server, Kind: episode.Generic})
		}
	}

	// Positions in the event order, and the agent's calls in that order.
	callPos := make([]int, len(calls))
	var agent []*episode.Call
	for i, ev := range ep.Events {
		if ev.Type == episode.EventCall && ev.Call != nil {
			callPos[ev.Call.Index] = i
			if ev.Call.By != episode.Proxy {
				agent = append(agent, ev.Call)
			}
		}
	}

	ix := newIndexer()
	ix.positions = l.opt.Positions
	ix.descriptions = l.opt.Descriptions
	args := make([]map[string]any, len(calls)) // decoded once per episode
	scope := &binding.Scope{}
	scope.Said.WordDates = l.opt.WordDates
	// The calls made since the last write, by tool: serving never repeats
	// one (they are in flight or answered), so a fan-out is not credited
	// with them.
	sinceWrite := map[string][]*episode.Call{}
	for pos, ev := range ep.Events {
		if ev.Type == episode.EventMessage && ev.Message != nil {
			// Served from the conversation logged so far: the customer's
			// words, and with AgentWords the agent's since the customer's
			// last message.
			if ev.Message.Role == "user" || l.opt.AgentWords && ev.Message.Role == "assistant" {
				scope.Hear(ev.Message.Role, ev.Message.Text)
			}
			continue
		}
		if ev.Type == episode.EventCall && ev.Call != nil {
			if kind(ev.Call) == episode.Write {
				clear(sinceWrite)
			}
			sinceWrite[ev.Call.Tool] = append(sinceWrite[ev.Call.Tool], ev.Call)
			continue
		}
		if ev.Type != episode.EventResult || ev.Result == nil {
			continue
		}
		ci := ev.Result.CallIndex
		if ci < 0 || ci >= len(calls) {
			continue
		}
		site := calls[ci]
		scope.Add(ci, &binding.Result{Tool: site.Tool, Text: ev.Result.Text, Args: string(site.Args)})
		if site.By == episode.Proxy {
			continue
		}
		sk := siteKey{site.Tool, ev.Result.IsError}
		sa := l.sites[sk]
		if sa == nil {
			sa = &siteAcc{count: flow.NewCount(l.opt.Folds), lookups: map[string]*lookupAcc{}, conds: map[string]*flow.Count{}, values: map[string]map[string]bool{}}
			l.sites[sk] = sa
		}
		sa.count.Add(fold)
		conds := siteConds(scope.Site, !l.opt.NoListConditions)
		if l.opt.SaidConditions || l.opt.Cues {
			for _, w := range scope.Said.Words(maxSaidConds) {
				c := "said \"" + w + "\""
				conds = append(conds, c)
				if l.opt.Cues {
					sa.noteSaid(c, key)
				}
			}
		}
		if l.opt.AgentWords {
			for _, w := range scope.Agent.Words(maxSaidConds) {
				c := "agent said \"" + w + "\""
				conds = append(conds, c)
				if l.opt.Cues {
					sa.noteSaid(c, key)
				}
			}
		}
		for _, c := range conds {
			sa.noteValue(c)
			if !sa.fewValues(c) {
				continue
			}
			n := sa.conds[c]
			if n == nil {
				n = ptrCount(flow.NewCount(l.opt.Folds))
				sa.conds[c] = n
			}
			n.Add(fold)
		}

		// The agent's lookups after the site: before its next write (reach)
		// and in its next LLM turn (habit).
		reach := map[string][]*episode.Call{}
		habit := map[string][]*episode.Call{}
		var order []string
		inReach := true
		for _, c := range agent {
			if callPos[c.Index] < pos {
				continue
			}
			k := kind(c)
			if k == episode.Write {
				inReach = false
			}
			nextTurn := c.Turn == site.Turn+1
			if !inReach && !nextTurn {
				if c.Turn > site.Turn+1 {
					break
				}
				continue
			}
			if k != episode.Read || c.Server != site.Server {
				continue
			}
			if _, seen := reach[c.Tool]; !seen {
				if _, seen := habit[c.Tool]; !seen {
					order = append(order, c.Tool)
				}
			}
			if inReach {
				reach[c.Tool] = append(reach[c.Tool], c)
			}
			if nextTurn {
				habit[c.Tool] = append(habit[c.Tool], c)
			}
		}
		for _, tool := range order {
			la := sa.lookups[tool]
			if la == nil {
				k := l.opt.Folds
				la = &lookupAcc{reach: flow.NewCount(k), habit: flow.NewCount(k), answered: flow.NewCount(k), bytes: flow.NewCount(k),
					tuples: map[string]*tupleAcc{}, when: map[string]*flow.Count{}}
				sa.lookups[tool] = la
			}
			if len(habit[tool]) > 0 {
				la.habit.Add(fold)
			}
			// Bindings are counted where the lookup was reached, so that
			// P(binding) = matched / reach.
			if made := reach[tool]; len(made) > 0 {
				la.reach.Add(fold)
				for _, c := range made {
					if c.Result != nil {
						la.answered.Add(fold)
						la.bytes.AddN(fold, len(c.Result.Text))
					}
				}
				for _, c := range conds {
					if sa.conds[c] == nil {
						continue
					}
					n := la.when[c]
					if n == nil {
						n = ptrCount(flow.NewCount(l.opt.Folds))
						la.when[c] = n
					}
					n.Add(fold)
				}
				l.countBindings(la, made, sinceWrite[tool], args, scope, ix, fold, key)
			}
		}
	}
}

// countBindings counts, for one occurrence of a lookup, every tuple of
// argument bindings that reproduces the agent's calls of it: every call the
// tuple makes (one per element of what it fans out over) is one of them.
// A tuple is evaluated by binding.Bind, as serving evaluates it.
func (l *Learner) countBindings(la *lookupAcc, made, prior []*episode.Call, decoded []map[string]any, scope *binding.Scope, ix *indexer, fold int, task string) {
	var first map[string]any
	var names []string
	actual := make(map[string]bool, len(made))
	asked := map[string]bool{}
	for _, c := range append(made[:len(made):len(made)], prior...) {
		args := decoded[c.Index]
		if args == nil {
			var ok bool
			if args, ok = decodeArgs(c.Args); !ok {
				continue
			}
			decoded[c.Index] = args
		}
		if first == nil {
			first = args
			names = make([]string, 0, len(first))
			for name := range first {
				names = append(names, name)
			}
			sort.Strings(names)
		}
		if len(args) != len(names) || !sameNames(args, names) {
			continue
		}
		k := jsontext.Canonical(args)
		if slices.Contains(prior, c) {
			asked[k] = true
		} else {
			actual[k] = true
		}
	}
	if first == nil {
		return
	}
	cands := make([][]string, len(names))
	firstVals := make([]string, len(names))
	for i, name := range names {
		v := first[name]
		firstVals[i] = jsontext.Canonical(v)
		cands[i] = ix.candidates(scope, v)
		if len(cands[i]) == 1 && !strings.HasPrefix(cands[i][0], "$") {
			// No one reference gives it: a template of parts, or a fan-out
			// collected into an array, may.
			var more []string
			switch x := v.(type) {
			case string:
				more = ix.templates(scope, x)
			case []any:
				more = ix.arrays(scope, x)
			}
			cands[i] = append(more, cands[i]...)
		}
	}
	// Each candidate evaluated once: a tuple with one that names nothing,
	// or fans out too far, is not tried.
	usable := make([][]bool, len(names))
	for i := range names {
		usable[i] = make([]bool, len(cands[i]))
		for j, expr := range cands[i] {
			vs, err := l.binding(expr).Eval(scope)
			usable[i][j] = err == nil && len(vs) > 0 && len(vs) <= maxFanOutValues
		}
	}
	// Every tuple, at most maxTuples, in a fixed order.
	idx := make([]int, len(names))
	exprs := make(map[string]binding.Expr, len(names))
	var key strings.Builder
	for n := 0; n < maxTuples; n++ {
		ok := true
		fanKey := ""
		for i, name := range names {
			expr := cands[i][idx[i]]
			b := l.binding(expr)
			exprs[name] = b
			if !usable[i][idx[i]] {
				ok = false
				break
			}
			if b.FanOut() {
				// Two lists fanned out against each other make every pair of
				// their values: not a lookup an agent makes. Over one list,
				// the arguments zip.
				if fk := fanOf(expr); fanKey != "" && fk != fanKey {
					ok = false
					break
				} else {
					fanKey = fk
				}
			}
		}
		if ok {
			if used, calls := tupleUse(names, exprs, scope, actual, asked); used > 0 {
				key.Reset()
				for i, name := range names {
					key.WriteString(name)
					key.WriteByte('=')
					key.WriteString(cands[i][idx[i]])
					key.WriteByte(0)
				}
				k := key.String()
				ta := la.tuples[k]
				if ta == nil {
					ta = &tupleAcc{matched: flow.NewCount(l.opt.Folds), calls: flow.NewCount(l.opt.Folds), used: flow.NewCount(l.opt.Folds)}
					for i, name := range names {
						expr := cands[i][idx[i]]
						ta.args = append(ta.args, argExpr{name: name, expr: expr, first: firstVals[i]})
						ta.fan = ta.fan || l.binding(expr).FanOut()
						ta.constant = ta.constant || !strings.HasPrefix(expr, "$") && !strings.HasPrefix(expr, "[$")
					}
					la.tuples[k] = ta
				}
				for i := range ta.args {
					a := &ta.args[i]
					if a.first != firstVals[i] {
						a.varied = true
						a.first = min(a.first, firstVals[i])
					}
				}
				ta.addTask(task, l.opt.MinSupport)
				if used == calls {
					ta.matched.Add(fold)
				}
				if ta.fan {
					ta.calls.AddN(fold, calls)
					ta.used.AddN(fold, used)
					if scope.Said.Len() > 0 {
						l.countNarrowed(ta, names, exprs, scope, actual, asked, fold, used, calls)
					}
				}
			}
		}
		i := len(idx) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(cands[i]) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			break
		}
	}
}

// fanOf returns the list a fan-out expression walks: the expression up to
// its fan step, as the binding package zips by. A template's fan-out is
// its fanned part's.
func fanOf(expr string) string {
	for _, part := range strings.Split(expr, " + ") {
		for _, mark := range []string{"[*]", "[said"} {
			if i := strings.Index(part, mark); i >= 0 {
				if mark == "[*]" {
					return part[:i+3]
				}
				j := strings.IndexByte(part[i:], ']')
				return part[:i+j+1]
			}
		}
	}
	return ""
}

func sameNames(args map[string]any, names []string) bool {
	for _, n := range names {
		if _, ok := args[n]; !ok {
			return false
		}
	}
	return true
}

// tupleUse returns how many calls the tuple makes (one per element of what
// it fans out over, less those already asked since the last write) and how
// many of them are the agent's (actual: their canonical arguments); 0, 0
// when it binds nothing or too much.
func tupleUse(names []string, exprs map[string]binding.Expr, scope *binding.Scope, actual, asked map[string]bool) (used, calls int) {
	objs, ok := binding.Bind(names, exprs, scope, maxFanOutValues+1)
	if !ok || len(objs) == 0 || len(objs) > maxFanOutValues {
		return 0, 0
	}
	for _, o := range objs {
		switch {
		case asked[string(o)]:
			// made already: serving would not repeat it
		case actual[string(o)]:
			used++
			calls++
		default:
			calls++
		}
	}
	return used, calls
}

func (l *Learner) binding(expr string) binding.Expr {
	b, ok := l.bindings[expr]
	if !ok {
		var err error
		if b, err = binding.Parse(expr); err != nil {
			panic(fmt.Sprintf("learn made a bad binding %q: %v", expr, err))
		}
		l.bindings[expr] = b
	}
	return b
}

// leastServer is the server a tool is pinned to: the least name of those
// it was met with, none only when none was named, so that the choice does
// not depend on the order of the episodes.
func leastServer(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return min(a, b)
}

func ptrCount(c flow.Count) *flow.Count { return &c }

func decodeArgs(raw json.RawMessage) (map[string]any, bool) {
	if len(raw) == 0 {
		return map[string]any{}, true
	}
	m, ok := binding.NewResult("", string(raw)).Doc().(map[string]any)
	return m, ok
}

func (l *Learner) noteTool(t *episode.Tool) {
	ta := l.tools[t.Name]
	if ta == nil {
		ta = &toolAcc{server: t.Server, kinds: map[episode.Kind]int{}, contracts: map[string]int{}}
		l.tools[t.Name] = ta
	}
	ta.server = leastServer(ta.server, t.Server)
	ta.kinds[t.Kind]++
	c, ok := l.contract[string(t.InputSchema)]
	if !ok {
		if ct := flow.ContractOf(t.InputSchema); ct != nil {
			raw, _ := json.Marshal(ct)
			c = string(raw)
		}
		l.contract[string(t.InputSchema)] = c
	}
	if c != "" {
		ta.contracts[c]++
	}
}

// writeDigest adds the digest of one episode (episodeDigest). Summed,
// the digest is the same whatever the order, and a merge of partials adds
// theirs.
func (l *Learner) writeDigest(ep *episode.Episode) {
	flow.AddDigest(&l.digest, episodeDigest(ep))
}

// Flow returns the flow learned so far. It is a pure function of the
// episodes added, in order: the same episodes give a byte-identical flow.
func (l *Learner) Flow() *flow.Flow {
	f := &flow.Flow{
		Version:    flow.Version,
		Domain:     l.opt.Domain,
		Servers:    sortedKeys(l.servers),
		MinSupport: l.opt.MinSupport,
		Learned: flow.Provenance{
			Episodes:   l.episodes,
			Tasks:      len(l.tasks),
			Sources:    sortedKeys(l.sources),
			Digest:     flow.DigestPrefix + hex.EncodeToString(l.digest[:]),
			HabitOnly:  l.opt.HabitOnly,
			WordDates:  l.opt.WordDates,
			Rest:       l.opt.Rest,
			Cues:       l.opt.Cues,
			AgentWords: l.opt.AgentWords,
		},
		Tools: map[string]flow.Tool{},
		Sites: []flow.Site{},
	}
	if l.opt.Folds > 1 {
		f.Folds = l.opt.Folds
	}
	if f.Servers == nil {
		f.Servers = []string{}
	}
	if f.Learned.Sources == nil {
		f.Learned.Sources = []string{}
	}
	if !l.latest.IsZero() {
		f.Learned.Date = l.latest.UTC().Format(time.RFC3339)
	}
	for name, ta := range l.tools {
		t := flow.Tool{Server: ta.server, Kind: episode.Generic}
		switch {
		case ta.kinds[episode.Write] > 0:
			t.Kind = episode.Write // any episode that saw it write wins
		case ta.kinds[episode.Read] > 0:
			t.Kind = episode.Read
		}
		best, bestN := "", 0
		for c, n := range ta.contracts {
			if n > bestN || n == bestN && c < best {
				best, bestN = c, n
			}
		}
		if best != "" {
			_ = json.Unmarshal([]byte(best), &t.Input)
		}
		f.Tools[name] = t
		if ta.server != "" && !l.servers[ta.server] {
			f.Servers = append(f.Servers, ta.server)
			sort.Strings(f.Servers)
			l.servers[ta.server] = true
		}
	}
	for sk, sa := range l.sites {
		s := flow.Site{Tool: sk.tool, Failed: sk.failed, Count: sa.count, Lookups: []flow.Lookup{}}
		for tool, la := range sa.lookups {
			if f.Tools[tool].Kind != episode.Read {
				continue // never a write or a generic, whatever one episode said
			}
			answered, size := la.answered, la.bytes
			lk := flow.Lookup{Tool: tool, Reach: la.reach, Habit: la.habit, Bindings: []flow.Bound{}, Answered: &answered, Bytes: &size}
			lk.Predicate = l.predicate(sa, la)
			if l.opt.Cues {
				lk.Cues = l.cues(sa, la)
			}
			var tuples []*tupleAcc
			input := f.Tools[tool].Input
			kept := map[string]*tupleAcc{}
			for _, ta := range la.tuples {
				ta = l.beatChance(ta)
				// A constant generalizes only if it served several tasks: one
				// task's id, met by many agents, is not a constant.
				if ta.support() >= l.opt.MinSupport && fits(ta.args, input) && (!ta.constant || len(ta.tasks) >= l.opt.MinSupport) {
					k := tupleText(ta)
					if o := kept[k]; o == nil || compareTuples(ta, o) < 0 {
						kept[k] = ta
					}
				}
			}
			for _, ta := range kept {
				tuples = append(tuples, ta)
			}
			slices.SortFunc(tuples, compareByValue(la))
			if len(tuples) > l.opt.MaxBindings {
				tuples = tuples[:l.opt.MaxBindings]
			}
			for _, ta := range tuples {
				b := flow.Bound{Args: map[string]binding.Expr{}, Matched: ta.matched}
				if ta.fan {
					calls, used := ta.calls, ta.used
					b.Calls, b.Used = &calls, &used
					b.Narrow = ta.narrow.bound()
				}
				for _, a := range ta.args {
					b.Args[a.name] = l.bindings[a.expr]
				}
				lk.Bindings = append(lk.Bindings, b)
			}
			s.Lookups = append(s.Lookups, lk)
		}
		slices.SortFunc(s.Lookups, func(a, b flow.Lookup) int { return strings.Compare(a.Tool, b.Tool) })
		f.Sites = append(f.Sites, s)
	}
	slices.SortFunc(f.Sites, func(a, b flow.Site) int {
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
	return f
}

// beatChance returns the tuple with each reference whose value never varied
// where it matched written as that value, a constant: a path that met the
// same value in every episode found it by coincidence (a constant that an
// unrelated result happens to hold), and the constant says what the agent
// did. The tuple then needs the tasks a constant needs.
func (l *Learner) beatChance(ta *tupleAcc) *tupleAcc {
	if l.opt.KeepReferences {
		return ta
	}
	var out *tupleAcc
	for i, a := range ta.args {
		if a.varied || !strings.HasPrefix(a.expr, "$") && !strings.HasPrefix(a.expr, "[$") || l.binding(a.expr).FanOut() {
			continue
		}
		if out == nil {
			c := *ta
			c.args = slices.Clone(ta.args)
			out = &c
		}
		out.args[i].expr = a.first
		l.binding(a.first)
		out.constant = true
	}
	if out == nil {
		return ta
	}
	return out
}

// predicate returns the condition on the site's result that best tells
// when the agent makes the lookup: the one whose split of the site's
// occurrences most improves the likelihood of reach (a G-test), when it
// held and failed in at least min support occurrences each, in more than
// one fold, on a path of few values (maxPathValues), and its G passes
// minPredicateG; nil when none does.
func (l *Learner) predicate(sa *siteAcc, la *lookupAcc) *flow.Predicate {
	n, reach := float64(sa.count.N), float64(la.reach.N)
	if n == 0 || reach == 0 || reach == n {
		return nil
	}
	base := bernoulliLL(reach, n)
	best, bestG := "", minPredicateG
	for c, held := range sa.conds {
		h := float64(held.N)
		if held.N < l.opt.MinSupport || sa.count.N-held.N < l.opt.MinSupport || !spread(*held) || !sa.fewValues(c) {
			continue
		}
		if !l.opt.SaidConditions && strings.HasPrefix(c, "said ") {
			continue // the customer's words, counted for cues only
		}
		r := 0.0
		if w := la.when[c]; w != nil {
			r = float64(w.N)
		}
		g := 2 * (bernoulliLL(r, h) + bernoulliLL(reach-r, n-h) - base)
		if g > bestG || g == bestG && best != "" && c < best {
			best, bestG = c, g
		}
	}
	if best == "" {
		return nil
	}
	cond, err := binding.ParseCond(best)
	if err != nil {
		return nil
	}
	p := &flow.Predicate{When: cond, Held: *sa.conds[best], Reach: flow.NewCount(l.opt.Folds)}
	if w := la.when[best]; w != nil {
		p.Reach = *w
	}
	return p
}

// cues returns the words said before the site, in at least
// flow.CueMinTasks distinct tasks, whose occurrences saw the agent make
// the lookup flow.CueLift times as often as the site's occurrences did,
// the likeliest first, at most maxCues: the customer's words, and with
// Options.AgentWords the agent's (flow.Cue.By).
func (l *Learner) cues(sa *siteAcc, la *lookupAcc) []flow.Cue {
	n, reach := sa.count.N, la.reach.N
	if n == 0 || reach == 0 {
		return nil
	}
	var out []flow.Cue
	for c, held := range sa.conds {
		word, by, ok := saidWord(c)
		if !ok || len(sa.saidIn[c]) < flow.CueMinTasks || !spread(*held) {
			continue
		}
		r := flow.NewCount(l.opt.Folds)
		if x := la.when[c]; x != nil {
			r = *x
		}
		tasks := flow.NewCount(l.opt.Folds)
		for t := range sa.saidIn[c] {
			tasks.Add(flow.FoldOf(t, l.k))
		}
		cue := flow.Cue{Word: word, By: by, Said: *held, Reach: r, Tasks: tasks}
		if cue.Lifts(-1, reach, n) {
			out = append(out, cue)
		}
	}
	slices.SortFunc(out, func(a, b flow.Cue) int {
		return cmp.Or(cmp.Compare(b.Rate(-1), a.Rate(-1)), strings.Compare(a.By, b.By), strings.Compare(a.Word, b.Word))
	})
	if len(out) > maxCues {
		out = out[:maxCues]
	}
	return out
}

// saidWord returns the word of a said condition as learn writes it
// (said "word", or agent said "word" for the agent's, by flow.CueByAgent);
// false for a condition on a result.
func saidWord(c string) (word, by string, ok bool) {
	if rest, agent := strings.CutPrefix(c, "agent "); agent {
		c, by = rest, flow.CueByAgent
	}
	w, ok := strings.CutPrefix(c, "said ")
	if !ok {
		return "", "", false
	}
	word, err := strconv.Unquote(w)
	return word, by, err == nil
}

// maxCues is the most cues a lookup keeps.
const maxCues = 16

// minPredicateG is the least G a predicate needs: χ² with one degree of
// freedom at p = 0.001, strict since every condition of a site is tried.
const minPredicateG = 10.83

// spread reports whether a count comes from more than one fold (or has no
// folds): a condition seen in one fold's tasks only is one task's.
func spread(c flow.Count) bool {
	if len(c.Folds) == 0 {
		return true
	}
	n := 0
	for _, x := range c.Folds {
		if x > 0 {
			n++
		}
	}
	return n > 1
}

// bernoulliLL is the log-likelihood of k successes in n trials at their own
// rate.
func bernoulliLL(k, n float64) float64 {
	ll := 0.0
	if k > 0 {
		ll += k * math.Log(k/n)
	}
	if n-k > 0 {
		ll += (n - k) * math.Log((n-k)/n)
	}
	return ll
}

// compareTuples ranks bindings: more of the agent's calls reproduced first
// (a fan-out counts each call it shares with the agent), then references
// before constants, the site's result before earlier ones, one element
// before a fan-out (the same calls with fewer detours), then by text.
func compareTuples(a, b *tupleAcc) int {
	if c := cmp.Compare(b.support(), a.support()); c != 0 {
		return c
	}
	if c := cmp.Compare(tupleRank(a), tupleRank(b)); c != 0 {
		return c
	}
	return strings.Compare(tupleText(a), tupleText(b))
}

func tupleRank(t *tupleAcc) int {
	r, fan := 0, 0
	for _, a := range t.args {
		switch {
		case strings.HasPrefix(a.expr, "$text"), strings.HasPrefix(a.expr, "$result"):
		case strings.HasPrefix(a.expr, "$"):
			r++
		default:
			r += 100
		}
		if strings.Contains(a.expr, "[*]") {
			fan = 1 // as many calls reproduced with more calls made: more detours
		}
	}
	return 2*r + fan
}

func tupleText(t *tupleAcc) string {
	var b strings.Builder
	for _, a := range t.args {
		b.WriteString(a.name)
		b.WriteByte('=')
		b.WriteString(a.expr)
		b.WriteByte(0)
	}
	return b.String()
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// fits reports whether a binding's arguments are all in the pinned input
// contract (nil: no contract to check), so a lookup made from it is one the
// server still takes.
func fits(args []argExpr, input flow.Contract) bool {
	if input == nil {
		return true
	}
	for _, a := range args {
		if _, ok := input[a.name]; !ok {
			return false
		}
	}
	return true
}
