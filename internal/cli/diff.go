package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/recording"
)

// Exit code of hoist diff when the recordings differ (as diff(1)).
const exitDiffer = 1

// diffOptions are hoist diff's inputs.
type diffOptions struct {
	IO     iostreams.Streams
	A, B   string
	JSON   bool
	Ignore []string
}

func newCmdDiff(f *Factory, runF func(context.Context, *diffOptions) error) *cobra.Command {
	opts := &diffOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "diff A B [--ignore [TOOL:]PATH]... [--json]",
		Short: "Compare two recordings call by call: what changed in arguments and answers",
		Long: `hoist diff compares two recordings of hoist-mcp --record, call by call: a
regression test for an agent (did it make the same calls?) or for a server
(did it give the same answers?). A and B are each a session log (.jsonl or
.jsonl.zst) or a directory, whose session logs are read in name order.

It compares the agent's calls (the host's tools/call requests, not the
proxy's lookups): the first call of a tool in A with the first call of that
tool in B, the second with the second, and so on, so that calls of other
tools in between do not shift the pairs. For each pair it compares the
arguments and the answer (the result, or a JSON-RPC error) field by field,
whatever the order of object members; a text that holds JSON in both
recordings (as most tools answer) is compared as JSON, so a change names
the field inside it, such as result.content[0].text.status. A call one
recording alone made is listed with its arguments.

--ignore PATH leaves out the changes at PATH and under it, for fields that
differ from run to run (a time, a generated id): * stands for any member
name and [*] for any index, and TOOL:PATH applies to one tool only, as in
--ignore 'get_order_details:result.content[*].text.updated_at'.

--json writes the same as one JSON object: calls_a, calls_b and calls, each
with tool, n (the tool's nth call), a and b (file:line), only ("a" or "b")
or changes (path, a, b: the values as JSON, absent where the field is).

Exit status: 0 when the recordings made the same calls with the same
answers, 1 when they differ, 2 for bad input: a file that is not a session
log or has a bad line (one line naming file:line and field).`,
		Example: `  # The same procedure, recorded twice: no output, exit 0.
  hoist diff ~/.hoist/logs/20261204T101500.000Z-4242.jsonl ~/.hoist/logs/20261204T101800.000Z-4301.jsonl

  # Leave out a field that differs from run to run:
  hoist diff --ignore 'result.content[*].text.request_id' before.jsonl after.jsonl

  # Two directories of sessions, for a script:
  hoist diff --json baseline-logs/ new-logs/`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return &FlagError{fmt.Errorf("want two recordings, A and B; got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.A, opts.B = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDiff(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.Ignore, "ignore", nil, "leave out changes at `[TOOL:]PATH` and under it, such as result.content[*].text.updated_at (repeatable)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "write the differences as JSON")
	return cmd
}

func runDiff(_ context.Context, o *diffOptions) error {
	a, err := recording.ReadFiles([]string{o.A})
	if err != nil {
		return &exitCodeError{code: ExitUsage, err: err}
	}
	b, err := recording.ReadFiles([]string{o.B})
	if err != nil {
		return &exitCodeError{code: ExitUsage, err: err}
	}
	r := recording.Diff(a, b, o.Ignore...)
	if o.JSON {
		if r.Calls == nil {
			r.Calls = []recording.CallDiff{}
		}
		if err := writeJSON(o.IO.Out, r); err != nil {
			return err
		}
	} else {
		writeDiff(o.IO.Out, &r)
	}
	if !r.Same() {
		return &exitCodeError{code: exitDiffer}
	}
	return nil
}

// writeDiff writes the report as text: nothing when the recordings are
// the same.
func writeDiff(w io.Writer, r *recording.Report) {
	if r.Same() {
		return
	}
	for _, c := range r.Calls {
		switch c.Only {
		case "a":
			fmt.Fprintf(w, "%s #%d only in A (%s): %s\n", c.Tool, c.N, c.A, clipValue(c.Arguments))
		case "b":
			fmt.Fprintf(w, "%s #%d only in B (%s): %s\n", c.Tool, c.N, c.B, clipValue(c.Arguments))
		default:
			fmt.Fprintf(w, "%s #%d (A %s, B %s)\n", c.Tool, c.N, c.A, c.B)
			for _, ch := range c.Changes {
				fmt.Fprintf(w, "  %s: %s → %s\n", ch.Path, clipValue(ch.A), clipValue(ch.B))
			}
		}
	}
	verb := "calls differ"
	if len(r.Calls) == 1 {
		verb = "call differs"
	}
	fmt.Fprintf(w, "%d %s (A made %d, B %d)\n", len(r.Calls), verb, r.CallsA, r.CallsB)
}

// clipValue prints a JSON value on one line, at most 100 characters;
// (absent) for a field that is not there.
func clipValue(b []byte) string {
	if b == nil {
		return "(absent)"
	}
	s := strings.ReplaceAll(string(b), "\n", `\n`)
	if r := []rune(s); len(r) > 100 {
		return string(r[:99]) + "…"
	}
	return s
}
