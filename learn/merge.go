package learn

import (
	"context"
	"errors"
	"fmt"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// Count counts every episode src gives for f into a Learner, the partial
// counts of those episodes (FromSource is Count, then Flow).
func Count(ctx context.Context, src episode.Source, f episode.Filter, opt Options) (*Learner, error) {
	return count(ctx, src, f, opt)
}

// NeedsArbiter reports whether a flow learned with these settings has an
// arbiter to fit: two folds or more, and not --habit-only.
func NeedsArbiter(f *flow.Flow) bool { return f.Folds >= 2 && !f.Learned.HabitOnly }

// Merged is what MergeShards made of the flows of shards.
type Merged struct {
	// Flow is the merge. Its Shard is set when keep was asked, or when its
	// arbiter is yet to fit (Pending).
	Flow *flow.Flow
	// Counts says the flows held partial counts (else training tables).
	Counts bool
	// Pending says the flow needs an arbiter that no table fitted yet:
	// each shard is to be replayed with it (hoist learn --shard --counts)
	// and the flows of their tables merged.
	Pending bool
	// Replayed and Of are, for tables, the episodes they hold and those
	// the counts were learned from.
	Replayed, Of int
}

// MergeShards merges the flows of shards that hoist learn --shard wrote
// (each with its "shard" member): partial counts add up into the flow one
// learn over every shard's episodes gives (with the shards' partial counts
// when keep is set, or while its arbiter is pending); training tables of
// every episode, replayed with that flow, add up into its arbiter, which
// the merge fits: the flow of one learn, arbiter included, byte for byte,
// however the episodes were split. Errors are *flow.MergeError, naming the
// flow (by its index; -1 for all of them) and the field.
func MergeShards(fs []*flow.Flow, keep bool) (*Merged, error) {
	if len(fs) == 0 {
		return nil, errors.New("no flows to merge")
	}
	var sum *Learner
	var table *Table
	fail := func(i int, err error) (*Merged, error) {
		var fe *flow.FieldError
		if errors.As(err, &fe) {
			return nil, &flow.MergeError{Index: i, Field: fe.Field, Err: fe.Err}
		}
		return nil, &flow.MergeError{Index: i, Err: err}
	}
	var base []byte
	for i, f := range fs {
		if f.Shard == nil {
			return fail(i, &flow.FieldError{Field: "shard", Err: errors.New("missing: not learned with hoist learn --shard, while the first flow was")})
		}
		l, t, err := ReadShard(f.Shard)
		if err != nil {
			return fail(i, err)
		}
		switch {
		case i == 0:
			sum, table = l, t
			if t != nil {
				if base, err = withoutShard(f); err != nil {
					return nil, err
				}
			}
		case l != nil && sum == nil:
			return fail(i, &flow.FieldError{Field: "shard.counts", Err: errors.New("partial counts, while the first flow holds a training table: merge the counts first, then the tables")})
		case t != nil && table == nil:
			return fail(i, &flow.FieldError{Field: "shard.table", Err: errors.New("a training table, while the first flow holds partial counts: merge the counts first, then the tables")})
		case l != nil:
			if err := sum.Merge(l); err != nil {
				return fail(i, err)
			}
		default:
			b, err := withoutShard(f)
			if err != nil {
				return nil, err
			}
			if string(b) != string(base) {
				return fail(i, &flow.FieldError{Field: "learned.digest", Err: fmt.Errorf("replayed with another flow (%s) than the first (%s): replay every shard with the same merged counts", f.Learned.Digest, fs[0].Learned.Digest)})
			}
			if err := table.Merge(t); err != nil {
				return fail(i, err)
			}
		}
	}
	if sum != nil {
		out := &Merged{Flow: sum.Flow(), Counts: true}
		out.Pending = NeedsArbiter(out.Flow)
		if keep || out.Pending {
			raw, err := sum.ShardOfCounts()
			if err != nil {
				return nil, err
			}
			out.Flow.Shard = raw
		}
		return out, out.Flow.Validate()
	}
	f := *fs[0]
	f.Shard, f.Arbiter = nil, nil
	out := &Merged{Flow: &f, Replayed: table.episodes, Of: f.Learned.Episodes}
	if table.episodes != f.Learned.Episodes || table.Digest() != f.Learned.Digest {
		if !keep {
			return fail(-1, &flow.FieldError{Field: "shard.table.episodes", Err: fmt.Errorf("the tables hold %d of the %d episodes the counts were learned from (or others): replay every shard with hoist learn --shard --counts, then merge all their flows", table.episodes, f.Learned.Episodes)})
		}
		out.Pending = true
	} else if err := table.Fit(&f); err != nil {
		return nil, err
	}
	if keep {
		raw, err := table.ShardOfTable()
		if err != nil {
			return nil, err
		}
		f.Shard = raw
	}
	return out, nil
}

// withoutShard is a flow's bytes without its shard member and arbiter: the
// flow a table was replayed with.
func withoutShard(f *flow.Flow) ([]byte, error) {
	g := *f
	g.Shard, g.Arbiter = nil, nil
	return g.Marshal()
}
