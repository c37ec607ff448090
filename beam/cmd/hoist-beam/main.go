// Command hoist-beam runs hoist's Apache Beam pipelines (docs/scale.md):
//
//	hoist-beam learn --sessions GLOB [--tau2 GLOB] --domain D --out FILE [learn flags] [beam flags]
//	hoist-beam export --sessions GLOB [--tau2 GLOB] --out DIR [beam flags]
//
// learn writes the flow hoist learn writes from the same sessions with the
// same flags, byte for byte; export writes the episode tables as sharded
// Parquet with hoist export's schema. Files are read and written through
// Beam's filesystems: local paths, gs:// and s3://. The runner is Beam's
// --runner flag: prism (in-process, the default), dataflow, flink, spark
// or universal, each with its own flags (--project, --region,
// --staging_location for Dataflow; --endpoint for a job server).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/hoist-mcp/hoist/beam/pipeline"
	"github.com/hoist-mcp/hoist/learn"
)

// globs is a flag given once or more.
type globs []string

func (g *globs) String() string     { return strings.Join(*g, ",") }
func (g *globs) Set(s string) error { *g = append(*g, s); return nil }

const usage = `usage:
  hoist-beam learn  --sessions GLOB [--tau2 GLOB --tools FILE --tool-schemas FILE] [--domain D] --out FILE
                    [--folds K] [--min-support N] [--habit-only] [--runner prism|dataflow|flink|spark ...]
  hoist-beam export --sessions GLOB [--tau2 GLOB ...] --out DIR [--runner ...]

learn writes the flow hoist learn writes from the same sessions with the same
flags, byte for byte: each host session's logs counted on any worker, the
counts merged in a combiner, the flow's arbiter fitted on a second pass.
export writes hoist export's tables (sessions, turns, calls, messages) as
Parquet, partitioned by domain and date, one file per shard.

GLOB names files on any filesystem Beam reads (a local path, gs://, s3://);
--sessions and --tau2 may be given more than once. Every other flag is
Beam's: --runner (prism, the default, runs in this process), and each
runner's own (Dataflow: --project --region --staging_location; Flink and
Spark: --endpoint of their job server). docs/scale.md has the commands.

Exit codes: 0 done; 1 failed; 2 bad flags.
`

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stderr)) }

func run(ctx context.Context, args []string, stderr io.Writer) int {
	cmd := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	var sessions, tau2 globs
	fl := flag.CommandLine
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, usage) }
	fl.Var(&sessions, "sessions", "session logs (and their .meta.json) to read, by `GLOB`; repeatable")
	fl.Var(&tau2, "tau2", "τ²-bench results files to read, by `GLOB`; repeatable")
	tools := fl.String("tools", "", "with --tau2: a tool-kinds manifest `FILE`")
	schemas := fl.String("tool-schemas", "", "with --tau2: the tools' input contracts, τ²-bench's tools.json `FILE`")
	domain := fl.String("domain", "", "learn from the episodes of this `DOMAIN`")
	folds := fl.Int("folds", learn.DefaultFolds, "split counts into `K` folds by task (1: none)")
	minSupport := fl.Int("min-support", learn.DefaultMinSupport, "the least `N` matches a binding needs")
	habitOnly := fl.Bool("habit-only", false, "write a flow without an arbiter")
	shards := fl.Int("shards", pipeline.DefaultShards, "export: write each partition of a dataset in at most `N` Parquet files")
	out := fl.String("out", "", "learn: the flow `FILE`; export: the directory")
	fl.StringVar(out, "o", "", "short for --out")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	// On a runner's worker, Init runs the worker and exits.
	beam.Init()
	bad := func(err error) int {
		fmt.Fprintf(stderr, "hoist-beam: %v\n", err)
		return 2
	}
	switch {
	case cmd != "learn" && cmd != "export":
		fmt.Fprint(stderr, usage)
		return 2
	case fl.NArg() > 0:
		return bad(fmt.Errorf("unexpected argument %q", fl.Arg(0)))
	case len(sessions) == 0 && len(tau2) == 0:
		return bad(errors.New("say what to read: --sessions GLOB, --tau2 GLOB, or both"))
	case (*tools != "" || *schemas != "") && len(tau2) == 0:
		return bad(errors.New("--tools and --tool-schemas go with --tau2"))
	case *out == "":
		return bad(errors.New("--out: want a file (learn) or a directory (export)"))
	case *folds < 1 || *folds > 1000:
		return bad(fmt.Errorf("--folds %d: want 1 to 1000", *folds))
	case *minSupport < 1:
		return bad(fmt.Errorf("--min-support %d: want at least 1", *minSupport))
	}
	src := pipeline.Sources{Sessions: sessions, Tau2: tau2, Tools: *tools, ToolSchemas: *schemas}
	p, s := beam.NewPipelineWithRoot()
	switch cmd {
	case "learn":
		f := pipeline.Learn(s, src, pipeline.LearnOptions{Domain: *domain, Folds: *folds, MinSupport: *minSupport, HabitOnly: *habitOnly})
		pipeline.WriteFlow(s, f, *out)
	case "export":
		pipeline.Export(s, src, *out, *shards)
	}
	if err := beamx.Run(ctx, p); err != nil {
		fmt.Fprintf(stderr, "hoist-beam: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "hoist-beam: %s: wrote %s\n", cmd, *out)
	return 0
}
