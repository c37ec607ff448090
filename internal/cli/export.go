package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/export"
	"github.com/hoist-mcp/hoist/internal/buildinfo"
	"github.com/hoist-mcp/hoist/internal/iostreams"
)

// exportOptions are hoist export's inputs.
type exportOptions struct {
	IO iostreams.Streams
	storeOptions
	Format string
	Out    string

	format export.Format
}

func newCmdExport(f *Factory, runF func(context.Context, *exportOptions) error) *cobra.Command {
	opts := &exportOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "export --format parquet|arrow|jsonl --out DIR [flags]",
		Short: "Write the episode store out as Parquet, Arrow or JSON lines",
		Long: `hoist export writes every session of the episode store to DIR as datasets a
notebook reads as they are: DuckDB, pandas, polars or Spark.

Each table is one dataset, a directory of its own: sessions (one row per
session), turns (one per LLM turn), calls (one per tool call, with its result)
and messages (the conversation); and, when the store holds flow logs
(hoist-mcp --flow), decisions (one per decision: the lookups offered, what
was taken and its propensity) and runs (one per run, with its sites, surprise
and log-probability). Each is partitioned the Hive way by the session's
domain and UTC start date:

  DIR/calls/domain=retail/date=2026-03-08/part-0.parquet

Columns are typed: timestamps are timestamps (UTC, milliseconds), counts are
integers, and JSON (arguments, results) is kept as strings, exactly as it was
sent. Names follow OpenTelemetry where it has one: tool_name, method,
request_id. Every file carries the store's schema version in its metadata,
and DIR/README.md, the dataset card, lists every column.

--format parquet writes Parquet with zstd compression; arrow writes Arrow IPC
files (Feather v2) with zstd buffers; jsonl writes JSON lines.

The export is written to a temporary directory beside DIR and renamed into
place when complete, so DIR never holds half an export. An existing DIR is
replaced only when it is empty or an earlier hoist export.

` + storeHelp + `

Progress shows on a terminal only; --quiet hides it and the summary.

` + exitHelp,
		Example: `  hoist export --sessions ~/.hoist/logs --format parquet --out ~/hoist/export
  duckdb -c "SELECT tool_name, count(*) FROM read_parquet('$HOME/hoist/export/calls/**/*.parquet') GROUP BY 1"

  hoist export --store episodes.db --format arrow --out export-arrow`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Format == "" {
				return &FlagError{errors.New("--format is required: parquet, arrow or jsonl")}
			}
			fm, err := export.ParseFormat(opts.Format)
			if err != nil {
				return &FlagError{err}
			}
			opts.format = fm
			if opts.Out == "" {
				return &FlagError{errors.New("--out DIR is required: the directory to write")}
			}
			if _, err := opts.storePath(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runExport(cmd.Context(), opts)
		},
	}
	addStoreFlags(cmd, &opts.storeOptions)
	cmd.Flags().StringVar(&opts.Format, "format", "", "parquet, arrow or jsonl")
	cmd.Flags().StringVar(&opts.Out, "out", "", "the directory to write (replaced when it holds an earlier export)")
	return cmd
}

func runExport(ctx context.Context, opts *exportOptions) error {
	db, bad, err := openStore(ctx, opts.IO, &opts.storeOptions)
	if err != nil {
		return err
	}
	defer db.Close()
	start := time.Now()
	bar := newBar(opts.IO.Err, opts.Quiet, "exporting")
	res, err := export.Export(ctx, db, export.Options{
		Format:  opts.format,
		Out:     opts.Out,
		Version: buildinfo.Version(),
		Progress: func(sessions, rows int64) {
			bar.set(int(sessions), 0, fmt.Sprintf("exporting: %d rows", rows))
		},
	})
	bar.finish()
	if err != nil {
		return err
	}
	if !opts.Quiet {
		var total int64
		var parts []string
		for _, name := range res.Written {
			total += res.Rows[name]
			parts = append(parts, fmt.Sprintf("%s %d", name, res.Rows[name]))
		}
		d := time.Since(start)
		fmt.Fprintf(opts.IO.Err, "hoist: exported %d rows (%s) to %s: %d files, %d partitions, %.1f MB, in %s (%.0f rows/s)\n",
			total, strings.Join(parts, ", "), opts.Out, res.Files, res.Partitions, float64(res.Bytes)/1e6,
			d.Round(time.Millisecond), float64(total)/max(d.Seconds(), 1e-6))
	}
	if bad {
		return badInputError()
	}
	return nil
}
