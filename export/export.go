// Package export writes the episode store out as datasets a notebook reads
// as they are: Parquet (zstd) or Arrow IPC through arrow-go, or JSON lines
// (DESIGN.md, "Export"; issue 3, point 6). It is the only package that
// imports arrow-go.
//
// Each table (sessions, turns, calls, messages, and decisions and runs when
// the store holds flow logs) is one dataset, Hive
// partitioned by the session's domain and UTC start date
// (sessions/domain=retail/date=2026-03-08/part-0.parquet), so that DuckDB,
// pandas, polars and Spark read the partition columns from the paths.
// Columns are typed (timestamps as timestamp[ms, UTC], counts as int64),
// JSON stays a string, and every file carries the store's schema version in
// its metadata (hoist.schema_version). A dataset card, README.md, is written
// beside the datasets.
//
// An export is atomic: it is written to a temporary directory beside --out
// and renamed into place, so a reader never sees half of one.
package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/internal/atomicfile"
	"github.com/hoist-mcp/hoist/store"
)

// FormatVersion is the version of the export's layout (datasets, columns,
// partitions), written beside the store's schema version.
const FormatVersion = 1

// Format is an output format.
type Format string

// The formats.
const (
	Parquet Format = "parquet"
	Arrow   Format = "arrow"
	JSONL   Format = "jsonl"
)

// Formats lists the formats, for help and flag checks.
var Formats = []Format{Parquet, Arrow, JSONL}

// Ext returns the file extension of the format.
func (f Format) Ext() string {
	switch f {
	case Arrow:
		return ".arrow"
	case JSONL:
		return ".jsonl"
	default:
		return ".parquet"
	}
}

// ParseFormat returns the format named s.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown format %q (want parquet, arrow or jsonl)", s)
}

// marker is the file that says a directory is a hoist export, which Export
// may replace.
const marker = ".hoist-export"

// Options says what to export where.
type Options struct {
	Format Format
	// Out is the directory to write; an existing one is replaced only when
	// it is empty or an earlier hoist export.
	Out string
	// Version is hoist's version, for the dataset card.
	Version string
	// Progress, when set, is called after each session with the rows
	// written so far.
	Progress func(sessions, rows int64)
}

// Result says what an export wrote.
type Result struct {
	Rows map[string]int64 // by dataset
	// Written are the datasets written, in order: every dataset but
	// decisions and runs when the store holds no flow logs.
	Written    []string
	Files      int
	Partitions int
	Bytes      int64
}

// Datasets returns the names of the exported datasets, in order.
func Datasets() []string {
	var out []string
	for _, d := range datasets {
		out = append(out, d.Name)
	}
	return out
}

// Export writes every episode of db to opts.Out.
func Export(ctx context.Context, db *store.DB, opts Options) (Result, error) {
	res := Result{Rows: map[string]int64{}}
	if opts.Out == "" {
		return res, errors.New("exporting: no output directory")
	}
	out := filepath.Clean(opts.Out)
	if err := checkReplaceable(out); err != nil {
		return res, err
	}
	err := atomicfile.WriteDir(out, 0o755, func(tmp string) error { return write(ctx, db, tmp, opts, &res) })
	return res, err
}

// write writes the export into tmp, the directory that then takes --out's
// place, and fills res.
func write(ctx context.Context, db *store.DB, tmp string, opts Options, res *Result) error {
	parts, err := db.Partitions(ctx)
	if err != nil {
		return err
	}
	counts, err := db.FlowRows(ctx)
	if err != nil {
		return fmt.Errorf("exporting: counting the flow logs' rows: %w", err)
	}
	var active []*dataset
	for _, d := range datasets {
		if d.Flow && counts[d.Name] == 0 {
			continue
		}
		active = append(active, d)
		res.Written = append(res.Written, d.Name)
	}
	res.Partitions = len(parts)
	mem := newAllocator()
	var sessions int64
	var rows atomic.Int64 // added to by every dataset's goroutine
	for _, p := range parts {
		if err := writePartition(ctx, db, tmp, p, active, opts.Format, db.SchemaVersion(), mem, res, &rows, func() {
			sessions++
			if opts.Progress != nil {
				opts.Progress(sessions, rows.Load())
			}
		}); err != nil {
			return err
		}
	}
	for _, d := range active {
		if err := os.MkdirAll(filepath.Join(tmp, d.Name), 0o755); err != nil {
			return fmt.Errorf("exporting: %w", err)
		}
	}
	card := Card(opts.Format, db.SchemaVersion(), opts.Version, *res)
	if err := writeNew(filepath.Join(tmp, "README.md"), []byte(card)); err != nil {
		return fmt.Errorf("writing the dataset card: %w", err)
	}
	if err := writeNew(filepath.Join(tmp, marker), []byte(fmt.Sprintf("hoist export, format %s, schema version %d\n", opts.Format, db.SchemaVersion()))); err != nil {
		return fmt.Errorf("exporting: %w", err)
	}
	return ctx.Err()
}

// partitionDir is a Hive partition's path: values escaped as Hive escapes
// them, and an empty domain as Hive's default (null) partition.
func partitionDir(p store.Partition) string {
	d := p.Domain
	if d == "" {
		d = "__HIVE_DEFAULT_PARTITION__"
	} else {
		d = hiveEscapeAll(d)
	}
	return filepath.Join("domain="+d, "date="+p.Date)
}

// hiveEscapeAll percent-encodes the characters Hive escapes in partition
// values.
func hiveEscapeAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || strings.IndexByte("\"#%'*/:=?\\\x7f{[]^", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func writePartition(ctx context.Context, db *store.DB, root string, p store.Partition, active []*dataset, format Format, schemaVersion int,
	mem memory.Allocator, res *Result, rows *atomic.Int64, progress func()) (err error) {
	type open struct {
		d    *dataset
		f    *os.File
		w    tableWriter
		rows int64
	}
	var files []*open
	defer func() {
		for _, o := range files {
			if o.w != nil {
				if cerr := o.w.Close(); cerr != nil && err == nil {
					err = fmt.Errorf("writing %s: %w", o.f.Name(), cerr)
				}
			}
			if err == nil {
				err = o.f.Sync()
			}
			if cerr := o.f.Close(); cerr != nil && err == nil {
				err = cerr
			}
			if err == nil {
				res.Rows[o.d.Name] += o.rows
				res.Files++
				if st, serr := os.Stat(o.f.Name()); serr == nil {
					res.Bytes += st.Size()
				}
			}
		}
	}()
	for _, d := range active {
		dir := filepath.Join(root, d.Name, partitionDir(p))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("exporting: %w", err)
		}
		f, err := os.OpenFile(filepath.Join(dir, "part-0"+format.Ext()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("exporting: %w", err)
		}
		o := &open{d: d, f: f}
		files = append(files, o)
		switch format {
		case Arrow:
			o.w, err = newIPCWriter(f, d, schemaVersion, mem)
		case JSONL:
			o.w = newJSONLWriter(f, d)
		default:
			o.w, err = newParquetWriter(f, d, schemaVersion, mem)
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", f.Name(), err)
		}
	}
	// Each dataset's file is written on a goroutine of its own, while the
	// store reads on: an export is as fast as its largest dataset (calls),
	// not the sum of reading and every dataset. Each goroutine gets every
	// episode, read-only, through a short queue, which bounds how many
	// episodes are in memory.
	type item struct {
		ep *episode.Episode
		s  store.Session
		fl *store.Flow
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(files))
	queues := make([]chan item, len(files))
	for i, o := range files {
		queues[i] = make(chan item, 32)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range queues[i] {
				if errs[i] != nil {
					continue // after an error, let the reader go on to its end
				}
				if err := o.d.rows(it.ep, it.s, it.fl, func(row []any) error {
					o.rows++
					rows.Add(1)
					return o.w.Append(row)
				}); err != nil {
					errs[i] = fmt.Errorf("exporting session %s: %w", it.ep.ID, err)
					cancel()
				}
			}
		}()
	}
	err = db.EpisodesIn(gctx, p, func(ep *episode.Episode, s store.Session, fl *store.Flow) error {
		for _, q := range queues {
			select {
			case q <- item{ep, s, fl}:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		progress()
		return gctx.Err()
	})
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	if werr := errors.Join(errs...); werr != nil {
		return werr
	}
	return err
}

// checkReplaceable refuses an --out that exists and is neither empty nor an
// earlier export, so an export never deletes someone's files.
func checkReplaceable(out string) error {
	st, err := os.Stat(out)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("exporting: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("exporting: %s exists and is not a directory", out)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return fmt.Errorf("exporting: %w", err)
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(out, marker)); err != nil {
		return fmt.Errorf("exporting: %s exists and is not a hoist export; choose another --out, or empty it", out)
	}
	return nil
}

// writeNew writes a file of the export's new directory.
func writeNew(path string, b []byte) error {
	return atomicfile.WriteNew(path, 0o644, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}
