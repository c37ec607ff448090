package flow

// Merging flows by addition (DESIGN.md, "Beyond one machine"): a flow is
// sums of counts, so flows learned from disjoint shards of the episodes
// add up to the flow of all of them. hoist flow merge is this file; each
// shard's flow can be learned anywhere (docs/scale.md).

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/hoist-mcp/hoist/episode"
)

// MergeError is a flow that cannot be merged with the others: Index is its
// place among Merge's arguments, Field the member that differs.
type MergeError struct {
	Index int
	Field string
	Err   error
}

func (e *MergeError) Error() string {
	if e.Index < 0 {
		if e.Field == "" {
			return e.Err.Error()
		}
		return fmt.Sprintf("%s: %v", e.Field, e.Err)
	}
	if e.Field == "" {
		return fmt.Sprintf("flow %d: %v", e.Index+1, e.Err)
	}
	return fmt.Sprintf("flow %d: %s: %v", e.Index+1, e.Field, e.Err)
}

func (e *MergeError) Unwrap() error { return e.Err }

// DigestPrefix begins every Provenance.Digest.
const DigestPrefix = "sha256:"

// AddDigest adds d, the SHA-256 of one episode, to sum, both read as
// 256-bit big-endian numbers, modulo 2²⁵⁶. A flow's digest is the sum of
// its episodes' digests, so that it does not depend on their order and the
// digest of a merge is the sum of its shards' digests.
func AddDigest(sum *[sha256.Size]byte, d []byte) {
	carry := 0
	for i := sha256.Size - 1; i >= 0; i-- {
		v := int(sum[i]) + int(d[i]) + carry
		sum[i], carry = byte(v), v>>8
	}
}

// ParseDigest reads a Provenance.Digest.
func ParseDigest(s string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	hexits, ok := strings.CutPrefix(s, DigestPrefix)
	if !ok || hex.DecodedLen(len(hexits)) != sha256.Size {
		return d, fmt.Errorf("%q is not %s and %d hex digits", s, DigestPrefix, 2*sha256.Size)
	}
	if _, err := hex.Decode(d[:], []byte(hexits)); err != nil {
		return d, fmt.Errorf("%q: %w", s, err)
	}
	return d, nil
}

// Merge returns the flow of the episodes the flows fs were learned from,
// adding their counts: sites, lookups, bindings (keyed by their
// arguments' expressions) and folds, and their provenance (episodes, tasks
// and digests add; sources join; the date is the latest). The flows must
// agree on domain, folds, min_support and habit_only, none may be
// promoted (promotion judges one flow's counts, so promote the merge), and
// none may have an arbiter (its weights do not add) or a shard member
// (learn.MergeShards adds those exactly, arbiter included).
//
// The merge is what learning every shard's episodes at once gives, byte
// for byte, when the shards hold different tasks (tasks are counted once
// per shard) and every binding the whole would keep, each shard that
// counted it kept: a shard learned with the default min_support drops a
// binding matched fewer times in it, which then counts less in the merge.
// Learn shards with --min-support 1 for exact sums. A tool's input
// contract is the one of the flow learned from the most episodes (the
// first among equals), as learn keeps the contract most episodes listed.
func Merge(fs ...*Flow) (*Flow, error) {
	if len(fs) == 0 {
		return nil, errors.New("no flows to merge")
	}
	first := fs[0]
	// No arbiter: mergeable refuses flows with one.
	out := &Flow{Version: Version, Domain: first.Domain, Folds: first.Folds, MinSupport: first.MinSupport,
		Tools: map[string]Tool{}}
	out.Learned.HabitOnly = first.Learned.HabitOnly
	out.Learned.WordDates = first.Learned.WordDates
	out.Learned.Rest = first.Learned.Rest
	out.Learned.Cues = first.Learned.Cues
	out.Learned.AgentWords = first.Learned.AgentWords
	var digest [sha256.Size]byte
	servers, sources := map[string]bool{}, map[string]bool{}
	toolFrom := map[string]int{} // tool → episodes of the flow its contract came from
	sites := map[siteKey]*Site{}
	for i, f := range fs {
		if err := mergeable(first, f); err != nil {
			err.Index = i
			return nil, err
		}
		d, err := ParseDigest(f.Learned.Digest)
		if err != nil {
			return nil, &MergeError{Index: i, Field: "learned.digest", Err: err}
		}
		AddDigest(&digest, d[:])
		out.Learned.Episodes += f.Learned.Episodes
		out.Learned.Tasks += f.Learned.Tasks
		out.Learned.Date = max(out.Learned.Date, f.Learned.Date) // RFC 3339 in UTC sorts as time
		for _, s := range f.Servers {
			servers[s] = true
		}
		for _, s := range f.Learned.Sources {
			sources[s] = true
		}
		for name, t := range f.Tools {
			have, ok := out.Tools[name]
			if !ok {
				out.Tools[name], toolFrom[name] = t, f.Learned.Episodes
				continue
			}
			if have.Server != t.Server {
				return nil, &MergeError{Index: i, Field: "tools." + name + ".server", Err: fmt.Errorf("%q, another flow says %q", t.Server, have.Server)}
			}
			have.Kind = mergedKind(have.Kind, t.Kind)
			if have.Input == nil || t.Input != nil && f.Learned.Episodes > toolFrom[name] {
				have.Input, toolFrom[name] = t.Input, f.Learned.Episodes
			}
			out.Tools[name] = have
		}
		for _, s := range f.Sites {
			k := siteKey{s.Tool, s.Failed}
			have := sites[k]
			if have == nil {
				have = &Site{Tool: s.Tool, Failed: s.Failed, Count: NewCount(out.Folds)}
				sites[k] = have
			}
			addCounts(&have.Count, s.Count)
			have.Lookups = mergeLookups(have.Lookups, s.Lookups, out.Folds)
		}
	}
	out.Servers = slices.Sorted(maps.Keys(servers))
	out.Learned.Sources = slices.Sorted(maps.Keys(sources))
	out.Learned.Digest = DigestPrefix + hex.EncodeToString(digest[:])
	out.Sites = make([]Site, 0, len(sites))
	for _, s := range sites {
		// A tool one flow saw write is a write: it is never looked up,
		// whatever another flow learned of it, as learn decides.
		s.Lookups = slices.DeleteFunc(s.Lookups, func(l Lookup) bool { return out.Tools[l.Tool].Kind != episode.Read })
		for i := range s.Lookups {
			l := &s.Lookups[i]
			scale := max(1, l.MeanBytes(-1)/DetourBytes)
			slices.SortStableFunc(l.Bindings, func(a, b Bound) int {
				if c := cmp.Compare(b.Value(-1, DefaultThreshold, scale), a.Value(-1, DefaultThreshold, scale)); c != 0 {
					return c
				}
				return compareBound(a, b)
			})
		}
		out.Sites = append(out.Sites, *s)
	}
	slices.SortFunc(out.Sites, func(a, b Site) int {
		if c := strings.Compare(a.Tool, b.Tool); c != 0 {
			return c
		}
		return compareBool(a.Failed, b.Failed)
	})
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("merging flows: %w", err)
	}
	return out, nil
}

type siteKey struct {
	tool   string
	failed bool
}

// mergeable says why f cannot be added to first, or nil.
func mergeable(first, f *Flow) *MergeError {
	differ := func(field string, got, want any) *MergeError {
		return &MergeError{Field: field, Err: fmt.Errorf("%v, the first flow has %v", got, want)}
	}
	switch {
	case f.Version != first.Version:
		return differ("hoist_flow", f.Version, first.Version)
	case f.Domain != first.Domain:
		return differ("domain", fmt.Sprintf("%q", f.Domain), fmt.Sprintf("%q", first.Domain))
	case f.Folds != first.Folds:
		return differ("folds", f.Folds, first.Folds)
	case f.MinSupport != first.MinSupport:
		return differ("min_support", f.MinSupport, first.MinSupport)
	case f.Arbiter != nil || first.Arbiter != nil:
		a := f.Arbiter
		if a == nil {
			a = first.Arbiter
		}
		return &MergeError{Field: "arbiter", Err: fmt.Errorf("fitted on the %d offers of one flow's episodes: arbiters do not add; learn the shards with hoist learn --shard, whose flows merge with their arbiter (docs/scale.md)", a.Fit.Offers)}
	case f.Shard != nil:
		return &MergeError{Field: "shard", Err: errors.New("a shard's partial counts or table, while the first flow has none: merge flows of hoist learn --shard together")}
	case f.Learned.HabitOnly != first.Learned.HabitOnly:
		return differ("learned.habit_only", f.Learned.HabitOnly, first.Learned.HabitOnly)
	case f.Learned.WordDates != first.Learned.WordDates:
		return differ("learned.word_dates", f.Learned.WordDates, first.Learned.WordDates)
	case f.Learned.Rest != first.Learned.Rest:
		return differ("learned.rest", f.Learned.Rest, first.Learned.Rest)
	case f.Learned.Cues != first.Learned.Cues:
		return differ("learned.cues", f.Learned.Cues, first.Learned.Cues)
	case f.Learned.AgentWords != first.Learned.AgentWords:
		return differ("learned.agent_words", f.Learned.AgentWords, first.Learned.AgentWords)
	}
	for _, s := range f.Sites {
		if s.Promoted != nil {
			return &MergeError{Field: "sites", Err: fmt.Errorf("promoted (site %s): merge the flows hoist learn wrote, then promote the merge", s.Tool)}
		}
	}
	return nil
}

// mergedKind is a tool's kind over two flows: a write in either is a
// write, else a read in either a read, as learn decides over episodes.
func mergedKind(a, b episode.Kind) episode.Kind {
	switch {
	case a == episode.Write || b == episode.Write:
		return episode.Write
	case a == episode.Read || b == episode.Read:
		return episode.Read
	}
	return a
}

// addCounts adds src to dst, fold by fold.
func addCounts(dst *Count, src Count) {
	dst.N += src.N
	for i := range min(len(dst.Folds), len(src.Folds)) {
		dst.Folds[i] += src.Folds[i]
	}
}

func mergeLookups(have, add []Lookup, k int) []Lookup {
	for _, l := range add {
		i, found := slices.BinarySearchFunc(have, l.Tool, func(h Lookup, tool string) int { return strings.Compare(h.Tool, tool) })
		if !found {
			have = slices.Insert(have, i, Lookup{Tool: l.Tool, Reach: NewCount(k), Habit: NewCount(k), Bindings: []Bound{}})
		}
		h := &have[i]
		addCounts(&h.Reach, l.Reach)
		addCounts(&h.Habit, l.Habit)
		h.Answered = addOptional(h.Answered, l.Answered, k)
		h.Bytes = addOptional(h.Bytes, l.Bytes, k)
		h.Predicate = mergePredicate(h, l, found)
		h.Cues = mergeCues(h.Cues, l.Cues, found)
		for _, b := range l.Bindings {
			key := BindingString(b.Args)
			j := slices.IndexFunc(h.Bindings, func(o Bound) bool { return BindingString(o.Args) == key })
			if j < 0 {
				h.Bindings = append(h.Bindings, Bound{Args: b.Args, Matched: NewCount(k), text: b.text, texted: b.texted})
				j = len(h.Bindings) - 1
			}
			hb := &h.Bindings[j]
			addCounts(&hb.Matched, b.Matched)
			hb.Calls = addOptional(hb.Calls, b.Calls, k)
			hb.Used = addOptional(hb.Used, b.Used, k)
			hb.Narrow = addNarrow(hb.Narrow, b.Narrow, k)
		}
	}
	return have
}

// mergePredicate adds the counts of two shards' predicates on one lookup
// when they hold the same condition. A predicate is chosen by each learn
// run from its own counts, so shards may choose different ones, or one
// none: the merge then keeps none, since neither's counts cover the other's
// episodes (learn over the whole would choose again).
func mergePredicate(h *Lookup, l Lookup, had bool) *Predicate {
	switch {
	case !had:
		if l.Predicate == nil {
			return nil
		}
		p := *l.Predicate
		p.Held, p.Reach = cloneCount(p.Held), cloneCount(p.Reach)
		return &p
	case h.Predicate == nil || l.Predicate == nil || !reflect.DeepEqual(h.Predicate.When, l.Predicate.When):
		return nil
	}
	addCounts(&h.Predicate.Held, l.Predicate.Held)
	addCounts(&h.Predicate.Reach, l.Predicate.Reach)
	return h.Predicate
}

// mergeCues adds the counts of the cues two shards' lookups both have. As
// a predicate, a cue is chosen by each learn run from its own counts: one
// only one shard has is dropped, since its counts do not cover the other's
// episodes. Tasks add up too, which counts a task both flows saw twice.
// The merge keeps the first's order.
func mergeCues(have, add []Cue, had bool) []Cue {
	if !had {
		out := make([]Cue, len(add))
		for i, c := range add {
			out[i] = Cue{Word: c.Word, By: c.By, Said: cloneCount(c.Said), Reach: cloneCount(c.Reach), Tasks: cloneCount(c.Tasks)}
		}
		return out
	}
	out := have[:0]
	for _, c := range have {
		if j := slices.IndexFunc(add, func(a Cue) bool { return a.Word == c.Word && a.By == c.By }); j >= 0 {
			addCounts(&c.Said, add[j].Said)
			addCounts(&c.Reach, add[j].Reach)
			addCounts(&c.Tasks, add[j].Tasks)
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func cloneCount(c Count) Count { return Count{N: c.N, Folds: slices.Clone(c.Folds)} }

func addOptional(dst, src *Count, k int) *Count {
	if src == nil {
		return dst
	}
	if dst == nil {
		c := NewCount(k)
		dst = &c
	}
	addCounts(dst, *src)
	return dst
}

// compareBound ranks a lookup's bindings of equal value (Bound.Value, at
// the default threshold) as learn does: the most of the agent's calls
// reproduced first, then references to the site's result
// before earlier results and constants, one element before a fan-out, then
// by their text.
func compareBound(a, b Bound) int {
	if c := cmp.Compare(b.Support(-1), a.Support(-1)); c != 0 {
		return c
	}
	if c := cmp.Compare(boundRank(a), boundRank(b)); c != 0 {
		return c
	}
	return strings.Compare(boundText(a), boundText(b))
}

func boundRank(b Bound) int {
	r, fan := 0, 0
	for _, e := range b.Args {
		s := e.String()
		switch {
		case strings.HasPrefix(s, "$text"), strings.HasPrefix(s, "$result"):
		case strings.HasPrefix(s, "$"):
			r++
		default:
			r += 100
		}
		if strings.Contains(s, "[*]") {
			fan = 1
		}
	}
	return 2*r + fan
}

// boundText is learn's text of a binding: name=expr and a NUL for each
// argument, by name.
func boundText(b Bound) string {
	var sb strings.Builder
	for _, name := range slices.Sorted(maps.Keys(b.Args)) {
		sb.WriteString(name)
		sb.WriteByte('=')
		sb.WriteString(b.Args[name].String())
		sb.WriteByte(0)
	}
	return sb.String()
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
