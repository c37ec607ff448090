package export

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/store"
)

// ShardWriter writes one dataset's rows to one Parquet file, as Export
// writes each partition's part-0.parquet: for writers of an export in
// shards (several files a partition, beam/), which give the same rows.
type ShardWriter struct{ w tableWriter }

// NewShardWriter writes dataset name as Parquet to f, with schemaVersion in
// its metadata. Close must succeed for the file to be whole.
func NewShardWriter(f *os.File, name string, schemaVersion int) (*ShardWriter, error) {
	for _, d := range datasets {
		if d.Name == name {
			w, err := newParquetWriter(f, d, schemaVersion, memory.NewGoAllocator())
			if err != nil {
				return nil, err
			}
			return &ShardWriter{w: w}, nil
		}
	}
	return nil, fmt.Errorf("exporting: no dataset %q", name)
}

// Append writes one row that Rows gave for the writer's dataset.
func (w *ShardWriter) Append(row []any) error { return w.w.Append(row) }

// Rows calls emit with each row of dataset name that Export writes for one
// episode, in column order; s is its list row, fl what its flow logs hold
// (nil without). Each row is emit's own, to keep: its slice and strings
// share nothing with the episode or the next row (Export's writers copy
// what they append, so its rows are not copied again).
func Rows(name string, ep *episode.Episode, s store.Session, fl *store.Flow, emit func([]any) error) error {
	for _, d := range datasets {
		if d.Name == name {
			return d.rows(ep, s, fl, func(row []any) error {
				own := slices.Clone(row)
				for i, v := range own {
					if s, ok := v.(string); ok {
						own[i] = strings.Clone(s)
					}
				}
				return emit(own)
			})
		}
	}
	return fmt.Errorf("exporting: no dataset %q", name)
}

// Close writes the rest of the file.
func (w *ShardWriter) Close() error { return w.w.Close() }

// PartitionDir returns the Hive partition directory of a domain and UTC
// date (2006-01-02) in a dataset, as Export names it.
func PartitionDir(domain, date string) string {
	return partitionDir(store.Partition{Domain: domain, Date: date})
}

var _ io.Closer = (*ShardWriter)(nil)
