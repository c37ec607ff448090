package pipeline

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"hash/fnv"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/hoist-mcp/hoist/beam/logs"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/export"
	"github.com/hoist-mcp/hoist/migrations"
	"github.com/hoist-mcp/hoist/store"
)

func init() {
	register.DoFn3x1[context.Context, logs.Unit, func(string, []byte), error](&exportFn{})
	register.DoFn3x1[context.Context, string, func(string, []byte), error](&exportTau2Fn{})
	register.DoFn3x1[context.Context, string, func(*[]byte) bool, error](&writeShardFn{})
	register.Emitter2[string, []byte]()
	register.Iter1[[]byte]()
	gob.Register(time.Time{})
	gob.Register([]string{})
}

// ExportDatasets are the tables the export pipeline writes: hoist export's
// episode tables. The flow logs' decisions and runs are hoist export's
// alone.
var ExportDatasets = []string{"sessions", "turns", "calls", "messages"}

// DefaultShards is how many Parquet files a partition of a dataset is
// written in, at most.
const DefaultShards = 4

// shardRows are one episode's rows of one dataset, as they travel to the
// writer of their shard: gob keeps each value's type (time, lists, null).
type shardRows struct {
	Started int64
	ID      string
	Rows    [][]any
}

// shardKey is where an episode's rows of a dataset go:
// dataset/domain=D/date=YYYY-MM-DD/part-N.parquet under the output.
func shardKey(dataset string, ep *episode.Episode, shards int) string {
	h := fnv.New32a()
	h.Write([]byte(ep.ID))
	date := ep.Started.UTC().Format("2006-01-02")
	return fmt.Sprintf("%s/%s/part-%d.parquet", dataset, strings.ReplaceAll(export.PartitionDir(ep.Domain, date), string(os.PathSeparator), "/"), h.Sum32()%uint32(shards))
}

// rowsOf emits an episode's rows of each dataset, keyed by their shard.
func rowsOf(ctx context.Context, ep *episode.Episode, bad, shards int, emit func(string, []byte)) error {
	s := session(ep, bad)
	for _, name := range ExportDatasets {
		rw := rowCollector{}
		if err := export.Rows(name, ep, s, nil, rw.add); err != nil {
			return fmt.Errorf("exporting session %s: %w", ep.ID, err)
		}
		if len(rw.rows) == 0 {
			continue
		}
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(shardRows{Started: ep.Started.UnixMilli(), ID: ep.ID, Rows: rw.rows}); err != nil {
			return fmt.Errorf("exporting session %s: %w", ep.ID, err)
		}
		emit(shardKey(name, ep, shards), buf.Bytes())
	}
	episodesOut.Inc(ctx, 1)
	return nil
}

type rowCollector struct{ rows [][]any }

func (r *rowCollector) add(row []any) error {
	r.rows = append(r.rows, row)
	return nil
}

// session is an episode's list row, as the store derives it when it
// stores the episode.
func session(ep *episode.Episode, bad int) store.Session {
	sum := store.Summarize(ep)
	s := store.Session{ID: ep.ID, Source: ep.Source, Domain: ep.Domain, HostSession: ep.HostSession, ClientName: ep.ClientName,
		TaskID: ep.TaskID, Trial: ep.Trial, Reward: ep.Reward, Started: ep.Started, DurationMS: sum.DurationMS, Servers: []string{},
		Turns: sum.Turns, Calls: sum.Calls, Reads: sum.Reads, Writes: sum.Writes, Errors: sum.Errors, Messages: sum.Messages, BadLines: bad}
	for _, sv := range ep.Servers {
		s.Servers = append(s.Servers, sv.Name)
	}
	return s
}

// exportFn turns a unit's episodes into rows.
type exportFn struct{ Shards int }

func (f *exportFn) ProcessElement(ctx context.Context, u logs.Unit, emit func(string, []byte)) error {
	eps, bad := unitEpisodes(ctx, u)
	for _, ep := range eps {
		if err := rowsOf(ctx, ep, bad, f.Shards, emit); err != nil {
			return err
		}
	}
	return nil
}

// exportTau2Fn turns a results file's simulations into rows.
type exportTau2Fn struct {
	Shards             int
	Tools, ToolSchemas string
	tau2               *episode.Tau2Options
}

func (f *exportTau2Fn) ProcessElement(ctx context.Context, path string, emit func(string, []byte)) error {
	eps, err := readTau2(ctx, &f.tau2, f.Tools, f.ToolSchemas, path)
	if err != nil {
		return err
	}
	for _, ep := range eps {
		if err := rowsOf(ctx, ep, 0, f.Shards, emit); err != nil {
			return err
		}
	}
	return nil
}

// writeShardFn writes one shard's rows, its episodes in start order, as
// one Parquet file. A retried shard writes the same file again.
type writeShardFn struct{ Out string }

func (f *writeShardFn) ProcessElement(ctx context.Context, key string, values func(*[]byte) bool) error {
	var eps []shardRows
	var b []byte
	for values(&b) {
		var sr shardRows
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&sr); err != nil {
			return fmt.Errorf("reading the rows of %s: %w", key, err)
		}
		eps = append(eps, sr)
	}
	sort.Slice(eps, func(i, j int) bool {
		if eps[i].Started != eps[j].Started {
			return eps[i].Started < eps[j].Started
		}
		return eps[i].ID < eps[j].ID
	})
	dataset := key[:strings.IndexByte(key, '/')]
	tmp, err := os.CreateTemp("", "hoist-shard-*.parquet")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	w, err := export.NewShardWriter(tmp, dataset, migrations.Latest())
	if err != nil {
		return err
	}
	for _, sr := range eps {
		for _, row := range sr.Rows {
			if err := w.Append(row); err != nil {
				w.Close()
				return fmt.Errorf("writing %s: %w", key, err)
			}
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	data, err := os.ReadFile(tmp.Name())
	if err != nil {
		return err
	}
	return writeUnder(ctx, f.Out, key, data)
}

// writeUnder writes a file at rel under the directory out, through its
// filesystem.
func writeUnder(ctx context.Context, out, rel string, data []byte) error {
	path := strings.TrimSuffix(out, "/") + "/" + rel
	if !strings.Contains(out, "://") {
		if err := os.MkdirAll(logs.Dir(path), 0o755); err != nil {
			return err
		}
	}
	return WriteFile(ctx, path, data)
}

// Export builds the pipeline of hoist export over the sources: each
// unit of session logs and each results file read into episodes, their
// rows of each of ExportDatasets keyed by partition and shard (a hash of
// the session id), and each shard written as one Parquet file with hoist
// export's schema: DIR/<dataset>/domain=D/date=YYYY-MM-DD/part-N.parquet.
// DIR should be new or empty.
func Export(s beam.Scope, src Sources, out string, shards int) {
	s = s.Scope("hoist.export")
	if shards < 1 {
		shards = DefaultShards
	}
	var rows []beam.PCollection
	if len(src.Sessions) > 0 {
		rows = append(rows, beam.ParDo(s, &exportFn{Shards: shards}, units(s, src.Sessions)))
	}
	if len(src.Tau2) > 0 {
		rows = append(rows, beam.ParDo(s, &exportTau2Fn{Shards: shards, Tools: src.Tools, ToolSchemas: src.ToolSchemas}, tau2Files(s, src.Tau2)))
	}
	beam.ParDo0(s, &writeShardFn{Out: out}, beam.GroupByKey(s, beam.Flatten(s, rows...)))
}
