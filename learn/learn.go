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
	maxRefsPerArg   = 4  // reference candidates per argument and occurrence
	maxTuples       = 64 // binding tuples tried per lookup and occurrence
	maxFanOutValues = 64 // values a fan-out may give and still match
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
}

type lookupAcc struct {
	reach, habit flow.Count
	tuples       map[string]*tupleAcc
}

type tupleAcc struct {
	args        []argExpr
	fan         bool
	constant    bool            // some argument is a constant
	tasks       map[string]bool // with a constant: the tasks it matched in, up to MinSupport
	matched     flow.Count
	calls, used flow.Count // a fan-out's calls and those the agent made
}

// support is how many of the agent's calls the tuple reproduced.
func (t *tupleAcc) support() int {
	if t.fan {
		return t.used.N
	}
	return t.matched.N
}

type argExpr struct{ name, expr string }

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
	n := opt.Workers
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	l := New(opt)
	shards := make([]*Learner, n)
	chans := make([]chan *episode.Episode, n)
	var wg sync.WaitGroup
	for w := range shards {
		shards[w] = New(opt)
		chans[w] = make(chan *episode.Episode, 32)
		wg.Add(1)
		go func(sh *Learner, ch <-chan *episode.Episode) {
			defer wg.Done()
			for ep := range ch {
				sh.count(ep)
			}
		}(shards[w], chans[w])
	}
	i := 0
	err := src.Episodes(ctx, f, func(ep *episode.Episode) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		l.note(ep)
		select {
		case chans[i%n] <- ep:
			i++
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	for _, ch := range chans {
		close(ch)
	}
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("reading episodes: %w", err)
	}
	for _, sh := range shards {
		l.merge(sh)
	}
	return l.Flow(), nil
}

// merge adds o's counts (not its provenance, which note keeps in order) to
// l. o must not be used after.
func (l *Learner) merge(o *Learner) {
	for sk, osa := range o.sites {
		sa := l.sites[sk]
		if sa == nil {
			l.sites[sk] = osa
			continue
		}
		addCount(&sa.count, osa.count)
		for tool, ola := range osa.lookups {
			la := sa.lookups[tool]
			if la == nil {
				sa.lookups[tool] = ola
				continue
			}
			addCount(&la.reach, ola.reach)
			addCount(&la.habit, ola.habit)
			for k, ota := range ola.tuples {
				ta := la.tuples[k]
				if ta == nil {
					la.tuples[k] = ota
					continue
				}
				addCount(&ta.matched, ota.matched)
				addCount(&ta.calls, ota.calls)
				addCount(&ta.used, ota.used)
				for task := range ota.tasks {
					if ta.tasks == nil {
						ta.tasks = map[string]bool{}
					}
					ta.tasks[task] = true
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
		if ta.server == "" {
			ta.server = ota.server
		}
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
	args := make([]map[string]any, len(calls)) // decoded once per episode
	scope := &binding.Scope{}
	// The calls made since the last write, by tool: serving never repeats
	// one (they are in flight or answered), so a fan-out is not credited
	// with them.
	sinceWrite := map[string][]*episode.Call{}
	for pos, ev := range ep.Events {
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
		scope.Add(ci, binding.NewResult(site.Tool, ev.Result.Text))
		if site.By == episode.Proxy {
			continue
		}
		sk := siteKey{site.Tool, ev.Result.IsError}
		sa := l.sites[sk]
		if sa == nil {
			sa = &siteAcc{count: flow.NewCount(l.opt.Folds), lookups: map[string]*lookupAcc{}}
			l.sites[sk] = sa
		}
		sa.count.Add(fold)

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
				la = &lookupAcc{reach: flow.NewCount(l.opt.Folds), habit: flow.NewCount(l.opt.Folds), tuples: map[string]*tupleAcc{}}
				sa.lookups[tool] = la
			}
			if len(habit[tool]) > 0 {
				la.habit.Add(fold)
			}
			// Bindings are counted where the lookup was reached, so that
			// P(binding) = matched / reach.
			if made := reach[tool]; len(made) > 0 {
				la.reach.Add(fold)
				l.countBindings(la, made, sinceWrite[tool], args, scope, ix, fold, key)
			}
		}
	}
}

// countBindings counts, for one occurrence of a lookup, every tuple of
// argument bindings that reproduces the agent's calls of it: every call the
// tuple makes (one per combination of fan-out values) is one of them.
func (l *Learner) countBindings(la *lookupAcc, made, prior []*episode.Call, decoded []map[string]any, scope *binding.Scope, ix *indexer, fold int, task string) {
	var first map[string]any
	var names []string
	actual := make(map[string]bool, len(made))
	asked := map[string]bool{}
	var key strings.Builder
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
		if len(args) != len(names) {
			continue
		}
		key.Reset()
		for _, name := range names {
			v, ok := args[name]
			if !ok {
				break
			}
			key.WriteString(valueKey(v))
			key.WriteByte(0)
		}
		if slices.Contains(prior, c) {
			asked[key.String()] = true
		} else {
			actual[key.String()] = true
		}
	}
	if first == nil {
		return
	}
	cands := make([][]string, len(names))
	for i, name := range names {
		cands[i] = ix.candidates(scope, first[name])
		if len(cands[i]) == 0 {
			return
		}
	}
	// Each candidate's values, as keys, evaluated once.
	vals := make([][][]string, len(names))
	for i := range names {
		vals[i] = make([][]string, len(cands[i]))
		for j, expr := range cands[i] {
			b := l.binding(expr)
			vs, err := b.Eval(scope)
			if err != nil || len(vs) == 0 || len(vs) > maxFanOutValues {
				continue
			}
			ks := make([]string, len(vs))
			for k, v := range vs {
				ks[k] = valueKey(v)
			}
			vals[i][j] = ks
		}
	}
	// Every tuple, at most maxTuples, in a fixed order.
	idx := make([]int, len(names))
	for n := 0; n < maxTuples; n++ {
		fans := 0
		for i := range names {
			if strings.Contains(cands[i][idx[i]], "[*]") {
				fans++
			}
		}
		if fans > 1 {
			// Two lists fanned out against each other make every pair of
			// their values: not a lookup an agent makes.
		} else if used, calls := tupleUse(vals, idx, actual, asked); used > 0 {
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
					ta.args = append(ta.args, argExpr{name, cands[i][idx[i]]})
					ta.fan = ta.fan || strings.Contains(cands[i][idx[i]], "[*]")
					ta.constant = ta.constant || !strings.HasPrefix(cands[i][idx[i]], "$")
				}
				la.tuples[k] = ta
			}
			if ta.constant && len(ta.tasks) < l.opt.MinSupport {
				if ta.tasks == nil {
					ta.tasks = map[string]bool{}
				}
				ta.tasks[task] = true
			}
			if used == calls {
				ta.matched.Add(fold)
			}
			if ta.fan {
				ta.calls.AddN(fold, calls)
				ta.used.AddN(fold, used)
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

// tupleUse returns how many calls the tuple makes (one per combination of
// its values, less those already asked since the last write) and how many
// of them are the agent's (actual: their argument keys joined by NUL); 0, 0
// when it binds nothing or too much.
func tupleUse(vals [][][]string, idx []int, actual, asked map[string]bool) (used, calls int) {
	n := 1
	for i := range vals {
		vs := vals[i][idx[i]]
		if len(vs) == 0 {
			return 0, 0
		}
		n *= len(vs)
		if n > maxFanOutValues {
			return 0, 0
		}
	}
	pos := make([]int, len(vals))
	var key strings.Builder
	for c := 0; c < n; c++ {
		key.Reset()
		for i := range vals {
			key.WriteString(vals[i][idx[i]][pos[i]])
			key.WriteByte(0)
		}
		switch k := key.String(); {
		case asked[k]:
			// made already: serving would not repeat it
		case actual[k]:
			used++
			calls++
		default:
			calls++
		}
		for i := len(pos) - 1; i >= 0; i-- {
			pos[i]++
			if pos[i] < len(vals[i][idx[i]]) {
				break
			}
			pos[i] = 0
		}
	}
	return used, calls
}

// valueKey is a JSON value's identity: its scalar key, or its canonical JSON.
func valueKey(v any) string {
	if k := scalarKey(v); k != "" {
		return k
	}
	return "j" + jsontext.Canonical(v)
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
	if ta.server == "" {
		ta.server = t.Server
	}
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

// writeDigest adds the digest of one episode: its id, task, calls,
// arguments and results.
func (l *Learner) writeDigest(ep *episode.Episode) {
	h := sha256.New()
	w := func(s string) {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	w(ep.ID)
	w(ep.TaskID)
	for _, c := range ep.Calls() {
		w(c.Tool)
		w(string(c.Args))
		if c.Result != nil {
			w(c.Result.Text)
			if c.Result.IsError {
				w("error")
			}
		}
	}
	// Summed, the digest is the same whatever the order, and a merge of
	// flows learned from shards adds theirs (flow.Merge).
	flow.AddDigest(&l.digest, h.Sum(nil))
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
			Episodes:  l.episodes,
			Tasks:     len(l.tasks),
			Sources:   sortedKeys(l.sources),
			Digest:    flow.DigestPrefix + hex.EncodeToString(l.digest[:]),
			HabitOnly: l.opt.HabitOnly,
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
			lk := flow.Lookup{Tool: tool, Reach: la.reach, Habit: la.habit, Bindings: []flow.Bound{}}
			var tuples []*tupleAcc
			input := f.Tools[tool].Input
			for _, ta := range la.tuples {
				// A constant generalizes only if it served several tasks: one
				// task's id, met by many agents, is not a constant.
				if ta.support() >= l.opt.MinSupport && fits(ta.args, input) && (!ta.constant || len(ta.tasks) >= l.opt.MinSupport) {
					tuples = append(tuples, ta)
				}
			}
			slices.SortFunc(tuples, compareTuples)
			if len(tuples) > l.opt.MaxBindings {
				tuples = tuples[:l.opt.MaxBindings]
			}
			for _, ta := range tuples {
				b := flow.Bound{Args: map[string]binding.Expr{}, Matched: ta.matched}
				if ta.fan {
					calls, used := ta.calls, ta.used
					b.Calls, b.Used = &calls, &used
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
