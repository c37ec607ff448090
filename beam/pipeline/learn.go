package pipeline

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/filter"

	"github.com/hoist-mcp/hoist/beam/logs"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/learn"
)

func init() {
	register.DoFn4x1[context.Context, logs.Unit, func(counts), func(string), error](&countFn{})
	register.DoFn4x1[context.Context, string, func(counts), func(string), error](&countTau2Fn{})
	register.DoFn5x1[context.Context, []byte, func(*counts) bool, func(*string) bool, func([]byte), error](&flowFn{})
	register.DoFn4x1[context.Context, logs.Unit, func(*[]byte) bool, func(table), error](&replayFn{})
	register.DoFn4x1[context.Context, string, func(*[]byte) bool, func(table), error](&replayTau2Fn{})
	register.DoFn3x2[context.Context, []byte, func(*table) bool, []byte, error](&fitFn{})
	register.DoFn2x1[context.Context, []byte, error](&writeFn{})
	register.Combiner1[counts](&mergeCounts{})
	register.Combiner1[table](&mergeTables{})
	register.Emitter1[counts]()
	register.Emitter1[table]()
	register.Emitter1[[]byte]()
	register.Iter1[counts]()
	register.Iter1[string]()
	register.Iter1[[]byte]()
	register.Iter1[table]()
	beam.RegisterCoder(reflect.TypeOf(counts{}), encodeCounts, decodeCounts)
	beam.RegisterCoder(reflect.TypeOf(table{}), encodeTable, decodeTable)
}

// LearnOptions are the flags of hoist learn that the flow depends on.
type LearnOptions struct {
	Domain     string
	Folds      int
	MinSupport int
	HabitOnly  bool
}

func (o LearnOptions) options() learn.Options {
	return learn.Options{Domain: o.Domain, Folds: o.Folds, MinSupport: o.MinSupport, HabitOnly: o.HabitOnly}
}

// counts is a partial of learn's counts (a learn.Learner), carried between
// workers as the "shard" member hoist learn --shard writes. A zero counts
// holds nothing.
type counts struct{ L *learn.Learner }

func encodeCounts(c counts) ([]byte, error) {
	if c.L == nil {
		return nil, nil
	}
	return c.L.ShardOfCounts()
}

func decodeCounts(b []byte) (counts, error) {
	if len(b) == 0 {
		return counts{}, nil
	}
	l, _, err := learn.ReadShard(b)
	if err == nil && l == nil {
		err = errors.New("partial counts: got a training table")
	}
	return counts{l}, err
}

func (c counts) merge(o counts) (counts, error) {
	switch {
	case o.L == nil:
		return c, nil
	case c.L == nil:
		return o, nil
	}
	return c, c.L.Merge(o.L)
}

// table is a partial of the arbiter's training table, carried as the
// "shard" member hoist learn --shard --counts writes. A zero table holds
// nothing.
type table struct{ T *learn.Table }

func encodeTable(t table) ([]byte, error) {
	if t.T == nil {
		return nil, nil
	}
	return t.T.ShardOfTable()
}

func decodeTable(b []byte) (table, error) {
	if len(b) == 0 {
		return table{}, nil
	}
	_, t, err := learn.ReadShard(b)
	if err == nil && t == nil {
		err = errors.New("training table: got partial counts")
	}
	return table{t}, err
}

func (t table) merge(o table) (table, error) {
	switch {
	case o.T == nil:
		return t, nil
	case t.T == nil:
		return o, nil
	}
	return t, t.T.Merge(o.T)
}

// countFn counts a unit's episodes of the domain (learn.Count), and emits
// the domains it met.
type countFn struct{ Opt LearnOptions }

func (f *countFn) ProcessElement(ctx context.Context, u logs.Unit, emit func(counts), domains func(string)) error {
	eps, _ := unitEpisodes(ctx, u)
	return f.count(ctx, eps, emit, domains)
}

func (f *countFn) count(ctx context.Context, eps logs.Slice, emit func(counts), domains func(string)) error {
	for _, ep := range eps {
		domains(ep.Domain)
	}
	opt := f.Opt.options()
	opt.Workers = 1
	l, err := learn.Count(ctx, eps, episode.Filter{Domain: f.Opt.Domain}, opt)
	if err != nil {
		return err
	}
	if l.Episodes() > 0 {
		episodesOut.Inc(ctx, int64(l.Episodes()))
		emit(counts{l})
	}
	return nil
}

// countTau2Fn counts a τ²-bench results file's simulations.
type countTau2Fn struct {
	Opt                LearnOptions
	Tools, ToolSchemas string
	tau2               *episode.Tau2Options
}

func (f *countTau2Fn) ProcessElement(ctx context.Context, path string, emit func(counts), domains func(string)) error {
	eps, err := readTau2(ctx, &f.tau2, f.Tools, f.ToolSchemas, path)
	if err != nil {
		return err
	}
	c := countFn{Opt: f.Opt}
	return c.count(ctx, eps, emit, domains)
}

func readTau2(ctx context.Context, opt **episode.Tau2Options, tools, schemas, path string) (logs.Slice, error) {
	if *opt == nil {
		o, err := tau2Options(ctx, tools, schemas)
		if err != nil {
			return nil, err
		}
		*opt = &o
	}
	filesRead.Inc(ctx, 1)
	var eps logs.Slice
	err := logs.Tau2(ctx, open, path, **opt, func(ep *episode.Episode) error {
		eps = append(eps, ep)
		return nil
	})
	return eps, err
}

// mergeCounts adds partial counts (learn.Learner.Merge): associative and
// commutative, so any grouping gives the counts of one learn.
type mergeCounts struct{}

func (mergeCounts) MergeAccumulators(a, b counts) (counts, error) { return a.merge(b) }

// mergeTables adds training tables (learn.Table.Merge).
type mergeTables struct{}

func (mergeTables) MergeAccumulators(a, b table) (table, error) { return a.merge(b) }

// flowFn turns the merged counts into the flow (learn.Learner.Flow), and
// refuses what hoist learn refuses: no episodes, or several domains
// without --domain.
type flowFn struct{ Opt LearnOptions }

func (f *flowFn) ProcessElement(ctx context.Context, _ []byte, sum func(*counts) bool, domains func(*string) bool, emit func([]byte)) error {
	if f.Opt.Domain == "" {
		seen := map[string]bool{}
		var d string
		for domains(&d) {
			seen[d] = true
		}
		if len(seen) > 1 {
			names := make([]string, 0, len(seen))
			for d := range seen {
				if d == "" {
					d = "(none)"
				}
				names = append(names, d)
			}
			slices.Sort(names)
			return fmt.Errorf("the sessions hold episodes of %d domains: %s; choose one with --domain", len(names), strings.Join(names, ", "))
		}
	}
	var c, all counts
	for sum(&c) {
		var err error
		if all, err = all.merge(c); err != nil {
			return err
		}
	}
	if all.L == nil || all.L.Episodes() == 0 {
		hint := ""
		if f.Opt.Domain != "" {
			hint = fmt.Sprintf(" in domain %q (is --domain right?)", f.Opt.Domain)
		}
		return errors.New("no episodes to learn from" + hint)
	}
	data, err := all.L.Flow().Marshal()
	if err != nil {
		return err
	}
	emit(data)
	return nil
}

// replayFn replays a unit's episodes with the flow of the merged counts,
// each served the other folds' counts, into their training table
// (learn.ReplayTable), as hoist learn --shard --counts does.
type replayFn struct {
	Opt LearnOptions
	f   *flow.Flow
}

func (f *replayFn) ProcessElement(ctx context.Context, u logs.Unit, fl func(*[]byte) bool, emit func(table)) error {
	data, ok := theFlow(fl)
	if !ok {
		return nil
	}
	eps, _ := unitEpisodes(ctx, u)
	return replay(ctx, &f.f, data, f.Opt.Domain, eps, emit)
}

// theFlow reads the flow side input. It is an iterable rather than a
// singleton so that, when flowFn fails (no episodes, two domains) and
// gives nothing, the replays give nothing too, and the job fails with
// flowFn's own error, not a runner's complaint about a missing singleton.
func theFlow(fl func(*[]byte) bool) ([]byte, bool) {
	var data []byte
	ok := fl(&data)
	return data, ok
}

func replay(ctx context.Context, cached **flow.Flow, data []byte, domain string, eps logs.Slice, emit func(table)) error {
	if *cached == nil {
		fl, err := flow.Parse(data, "the flow of the merged counts")
		if err != nil {
			return err
		}
		*cached = fl
	}
	t, err := learn.ReplayTable(ctx, eps, episode.Filter{Domain: domain}, *cached, learn.ArbiterOptions{})
	if err != nil {
		return err
	}
	if t.Episodes() > 0 {
		emit(table{t})
	}
	return nil
}

// replayTau2Fn replays a τ²-bench results file's simulations.
type replayTau2Fn struct {
	Opt                LearnOptions
	Tools, ToolSchemas string
	tau2               *episode.Tau2Options
	f                  *flow.Flow
}

func (f *replayTau2Fn) ProcessElement(ctx context.Context, path string, fl func(*[]byte) bool, emit func(table)) error {
	data, ok := theFlow(fl)
	if !ok {
		return nil
	}
	eps, err := readTau2(ctx, &f.tau2, f.Tools, f.ToolSchemas, path)
	if err != nil {
		return err
	}
	return replay(ctx, &f.f, data, f.Opt.Domain, eps, emit)
}

// fitFn fits the flow's arbiter on the merged training table
// (learn.Table.Fit).
type fitFn struct{}

func (f *fitFn) ProcessElement(ctx context.Context, data []byte, tables func(*table) bool) ([]byte, error) {
	fl, err := flow.Parse(data, "the flow of the merged counts")
	if err != nil {
		return nil, err
	}
	var t, all table
	for tables(&t) {
		if all, err = all.merge(t); err != nil {
			return nil, err
		}
	}
	if all.T != nil {
		if all.T.Episodes() != fl.Learned.Episodes || all.T.Digest() != fl.Learned.Digest {
			return nil, fmt.Errorf("the training tables hold %d of the %d episodes counted: an input changed between the passes", all.T.Episodes(), fl.Learned.Episodes)
		}
		if err := all.T.Fit(fl); err != nil {
			return nil, err
		}
	}
	return fl.Marshal()
}

// writeFn writes the flow.
type writeFn struct{ Out string }

func (f *writeFn) ProcessElement(ctx context.Context, data []byte) error {
	return WriteFile(ctx, f.Out, data)
}

// Learn builds the pipeline of hoist learn over the sources: each unit of
// session logs and each results file counted (learn.Count), the counts
// merged in a combiner, the flow of the sum, and, when it has an arbiter
// to fit (two folds or more, not habit-only), a second pass that replays
// every episode with that flow into the training table, merged in a
// combiner and fitted. out receives the flow's bytes: the flow hoist learn
// writes from the same sessions with the same flags, byte for byte.
func Learn(s beam.Scope, src Sources, opt LearnOptions) beam.PCollection {
	s = s.Scope("hoist.learn")
	var us, ts beam.PCollection
	var partials, domains []beam.PCollection
	if len(src.Sessions) > 0 {
		us = units(s, src.Sessions)
		c, d := beam.ParDo2(s, &countFn{Opt: opt}, us)
		partials, domains = append(partials, c), append(domains, d)
	}
	if len(src.Tau2) > 0 {
		ts = tau2Files(s, src.Tau2)
		c, d := beam.ParDo2(s, &countTau2Fn{Opt: opt, Tools: src.Tools, ToolSchemas: src.ToolSchemas}, ts)
		partials, domains = append(partials, c), append(domains, d)
	}
	sum := beam.Combine(s, mergeCounts{}, beam.Flatten(s, partials...))
	seen := filter.Distinct(s, beam.Flatten(s, domains...))
	fl := beam.ParDo(s, &flowFn{Opt: opt}, beam.Impulse(s), beam.SideInput{Input: sum}, beam.SideInput{Input: seen})
	if opt.HabitOnly || opt.Folds < 2 {
		return fl
	}
	var tables []beam.PCollection
	if len(src.Sessions) > 0 {
		tables = append(tables, beam.ParDo(s, &replayFn{Opt: opt}, us, beam.SideInput{Input: fl}))
	}
	if len(src.Tau2) > 0 {
		tables = append(tables, beam.ParDo(s, &replayTau2Fn{Opt: opt, Tools: src.Tools, ToolSchemas: src.ToolSchemas}, ts, beam.SideInput{Input: fl}))
	}
	t := beam.Combine(s, mergeTables{}, beam.Flatten(s, tables...))
	return beam.ParDo(s, &fitFn{}, fl, beam.SideInput{Input: t})
}

// WriteFlow writes the flow Learn gives to out, through its filesystem.
func WriteFlow(s beam.Scope, flowBytes beam.PCollection, out string) {
	s = s.Scope("hoist.write")
	beam.ParDo0(s, &writeFn{Out: out}, flowBytes)
}
