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

// options are hoist-beam's own flags, beside Beam's on the same flag set.
var options struct {
	sessions, tau2         globs
	tools, schemas, domain string
	folds, minSupport      int
	habitOnly              bool
	shards                 int
	out                    string
}

func init() {
	fl := flag.CommandLine
	o := &options
	fl.Var(&o.sessions, "sessions", "session logs (and their .meta.json) to read, by `GLOB`; repeatable")
	fl.Var(&o.tau2, "tau2", "τ²-bench results files to read, by `GLOB`; repeatable")
	fl.StringVar(&o.tools, "tools", "", "with --tau2: a tool-kinds manifest `FILE`")
	fl.StringVar(&o.schemas, "tool-schemas", "", "with --tau2: the tools' input contracts, τ²-bench's tools.json `FILE`")
	fl.StringVar(&o.domain, "domain", "", "learn: learn from the episodes of this `DOMAIN`")
	fl.IntVar(&o.folds, "folds", learn.DefaultFolds, "learn: split counts into `K` folds by task (1: none)")
	fl.IntVar(&o.minSupport, "min-support", learn.DefaultMinSupport, "learn: the least `N` matches a binding needs")
	fl.BoolVar(&o.habitOnly, "habit-only", false, "learn: write a flow without an arbiter")
	fl.IntVar(&o.shards, "shards", pipeline.DefaultShards, "export: write each partition of a dataset in at most `N` Parquet files")
	fl.StringVar(&o.out, "out", "", "learn: the flow `FILE`; export: the directory")
	fl.StringVar(&o.out, "o", "", "short for --out")
}

// run parses args (a command, then flags: hoist-beam's and Beam's) and
// runs the pipeline. Beam's flags are the process's, so run parses into
// them, each of its own flags from its default.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	cmd := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	fl := flag.CommandLine
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, usage) }
	o := &options
	o.sessions, o.tau2 = nil, nil
	for _, name := range []string{"tools", "tool-schemas", "domain", "folds", "min-support", "habit-only", "shards", "out"} {
		f := fl.Lookup(name)
		f.Value.Set(f.DefValue)
	}
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
	case len(o.sessions) == 0 && len(o.tau2) == 0:
		return bad(errors.New("say what to read: --sessions GLOB, --tau2 GLOB, or both"))
	case (o.tools != "" || o.schemas != "") && len(o.tau2) == 0:
		return bad(errors.New("--tools and --tool-schemas go with --tau2"))
	case o.out == "":
		return bad(errors.New("--out: want a file (learn) or a directory (export)"))
	case o.folds < 1 || o.folds > 1000:
		return bad(fmt.Errorf("--folds %d: want 1 to 1000", o.folds))
	case o.minSupport < 1:
		return bad(fmt.Errorf("--min-support %d: want at least 1", o.minSupport))
	case o.shards < 1:
		return bad(fmt.Errorf("--shards %d: want at least 1", o.shards))
	}
	src := pipeline.Sources{Sessions: o.sessions, Tau2: o.tau2, Tools: o.tools, ToolSchemas: o.schemas}
	p, s := beam.NewPipelineWithRoot()
	switch cmd {
	case "learn":
		f := pipeline.Learn(s, src, pipeline.LearnOptions{Domain: o.domain, Folds: o.folds, MinSupport: o.minSupport, HabitOnly: o.habitOnly})
		pipeline.WriteFlow(s, f, o.out)
	case "export":
		pipeline.Export(s, src, o.out, o.shards)
	}
	if err := beamx.Run(ctx, p); err != nil {
		fmt.Fprintf(stderr, "hoist-beam: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "hoist-beam: %s: wrote %s\n", cmd, o.out)
	return 0
}
