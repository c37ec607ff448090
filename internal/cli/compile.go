package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/learn"
)

// compileOptions are hoist compile's inputs.
type compileOptions struct {
	IO iostreams.Streams
	learnFlags
	Tau2    []string
	Tools   string
	Schemas string
	Quiet   bool
}

func newCmdCompile(f *Factory, runF func(context.Context, *compileOptions) error) *cobra.Command {
	opts := &compileOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "compile --tau2 FILE... [--tools tool_kinds.json] [flags]",
		Short: "Learn a flow straight from τ²-bench results files",
		Long: `hoist compile learns the same flow as hoist learn, straight from τ²-bench
results files (results/<domain>-<agent>.json), with no store: every assistant
message with tool calls is one LLM turn, exactly.

τ²-bench files do not say which tools write. --tools names a manifest of
tool kinds (tool_kinds.json: domain → tool → read, write or generic), and
--schemas the tools' input contracts (tools.json); by default compile looks
for tool_kinds.json and tools.json beside each file and in its parent
directory. A flow only ever looks up read tools, so without kinds it learns
sites but no lookups.

All files must be of one domain, or name it with --domain.`,
		Example: `  hoist compile --tau2 results/retail-*.json -o retail.flow.json
  hoist compile --tau2 a.json --tau2 b.json --tools tool_kinds.json --schemas tools.json --domain airline`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Tau2 = append(opts.Tau2, args...)
			if len(opts.Tau2) == 0 {
				return &FlagError{errors.New("name τ²-bench results files with --tau2 FILE")}
			}
			if err := opts.learnFlags.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCompile(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringSliceVar(&opts.Tau2, "tau2", nil, "τ²-bench results `FILE`s (repeat, or list them after the flags)")
	cmd.Flags().StringVar(&opts.Tools, "tools", "", "tool kinds manifest `FILE` (tool_kinds.json or tools.json)")
	cmd.Flags().StringVar(&opts.Schemas, "schemas", "", "input contracts `FILE` (tools.json)")
	cmd.Flags().BoolVarP(&opts.Quiet, "quiet", "q", false, "print nothing but the flow and errors")
	addLearnFlags(cmd, &opts.learnFlags)
	return cmd
}

// besideOrAbove returns the first of dir/name and dir/../name that exists.
func besideOrAbove(file, name string) string {
	dir := filepath.Dir(file)
	for _, d := range []string{dir, filepath.Dir(dir)} {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func runCompile(ctx context.Context, o *compileOptions) error {
	start := time.Now()
	tools, schemas := o.Tools, o.Schemas
	if tools == "" {
		tools = besideOrAbove(o.Tau2[0], "tool_kinds.json")
	}
	if schemas == "" {
		schemas = besideOrAbove(o.Tau2[0], "tools.json")
	}
	var topt episode.Tau2Options
	if tools != "" {
		k, err := episode.LoadToolKinds(tools)
		if err != nil {
			return err
		}
		topt.Kinds = k
	} else if !o.Quiet {
		fmt.Fprintln(o.IO.Err, "hoist: no tool kinds (--tools): every tool is generic, so the flow makes no lookups")
	}
	if schemas != "" {
		s, err := episode.LoadToolSchemas(schemas)
		if err != nil {
			return err
		}
		topt.Schemas = s
	}
	topt.Domain = o.Domain
	l := learn.New(o.options())
	domain := o.Domain
	for _, path := range o.Tau2 {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("reading τ²-bench results: %w", err)
		}
		err = episode.EachTau2(f, path, topt, func(ep *episode.Episode) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			switch {
			case o.Domain != "" && ep.Domain != o.Domain:
				return nil
			case domain == "":
				domain = ep.Domain
			case ep.Domain != domain:
				return &FlagError{fmt.Errorf("%s: domain %s, but earlier files are %s: compile one domain at a time, or name it with --domain", path, ep.Domain, domain)}
			}
			l.Add(ep)
			return nil
		})
		f.Close()
		if err != nil {
			return err
		}
	}
	fl := l.Flow()
	fl.Domain = domain
	return writeFlow(o.IO, o.Out, fl, o.Quiet, time.Since(start))
}
