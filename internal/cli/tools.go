package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/internal/atomicfile"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/recording"
	"github.com/hoist-mcp/hoist/toolpin"
)

// toolsOptions are hoist tools' inputs, and hoist tools pin's.
type toolsOptions struct {
	IO       iostreams.Streams
	Logs     []string // session logs and directories of them
	Sessions string
	Server   string
	JSON     bool
	Out      string // pin: the pin file
}

// logs returns the session logs and directories to read.
func (o *toolsOptions) logs() []string {
	if o.Sessions != "" {
		return append(slices.Clone(o.Logs), o.Sessions)
	}
	return o.Logs
}

func newCmdTools(f *Factory, runF, pinF func(context.Context, *toolsOptions) error) *cobra.Command {
	opts := &toolsOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "tools [LOG|DIR...] [--sessions DIR] [--server NAME] [--json]",
		Short: "List each server's tools across recorded sessions, and what changed when",
		Long: `hoist tools reads the tools/list answers recorded in session logs (hoist-mcp
--record; the logs named, the session logs of the directories named, or of
--sessions DIR) and lists, for each server, its tools as last listed (name,
whether annotated read-only, description, input members), then every change
between one listing and the next, in the order the sessions started: the
session and time of the listing that first showed it, the tool, and whether
it was added, removed, or changed, naming the members of the definition
that changed (description, inputSchema, outputSchema, annotations, title).

A server is named by the proxy's --server-name, else by the name its
initialize answer gives, else by its command. --server NAME shows one.

A changed description or schema is how a server can change what the agent
does after its tools were approved ("rug pull", tool poisoning): hoist tools
pin writes the tools of a listing to a pin file, which a proxy can hold each
later listing to.

--json writes {"servers": [...]}: each server's name, sessions, latest
listing (with each tool's full definition and digest) and changes (session,
where as file:line, unix_ms, tool, kind, fields, and the pinned and listed
definitions).

Exit status: 0, 1 when no log holds a tools/list answer, 2 for bad input (a
file that is not a session log, or has a bad line, named with its line).`,
		Example: `  hoist tools --sessions ~/.hoist/logs
  hoist tools --sessions ~/.hoist/logs --server weather --json
  hoist tools pin --sessions ~/.hoist/logs --server weather --out weather.pin.json`,
		// Logs, not subcommands, after the flags: cobra would otherwise
		// take a first argument for an unknown subcommand.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Logs = args
			if len(opts.logs()) == 0 {
				return &FlagError{errors.New("name session logs or directories, or --sessions DIR")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runTools(cmd.Context(), opts)
		},
	}
	addToolsFlags(cmd, opts)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "write the servers' tools and changes as JSON")
	cmd.AddCommand(newCmdToolsPin(f, pinF))
	return cmd
}

func addToolsFlags(cmd *cobra.Command, opts *toolsOptions) {
	cmd.Flags().StringVar(&opts.Sessions, "sessions", "", "a `DIR`ectory of session logs recorded by hoist-mcp --record")
	cmd.Flags().StringVar(&opts.Server, "server", "", "only the server `NAME`d")
}

func newCmdToolsPin(f *Factory, runF func(context.Context, *toolsOptions) error) *cobra.Command {
	opts := &toolsOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "pin --out FILE [LOG|DIR...] [--sessions DIR] [--server NAME]",
		Short: "Write a server's tools, as last listed, to a pin file",
		Long: `hoist tools pin writes the tools a server listed last in the session logs
read (as hoist tools reads them) to a pin file: for each tool its name, its
definition exactly as listed and a digest of it (sha256 of its canonical
JSON, so member order and spacing do not change it). docs/tools.md
describes the format. When the logs hold several servers, --server names the
one to pin.

The file is written whole or not at all (a temporary file renamed into
place).

Exit status: 0 when written, 1 when no log holds a tools/list answer of the
server, 2 for a usage error or bad input (named file:line).`,
		Example: `  hoist tools pin --sessions ~/.hoist/logs --server weather --out weather.pin.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Logs = args
			if len(opts.logs()) == 0 {
				return &FlagError{errors.New("name session logs or directories, or --sessions DIR")}
			}
			if opts.Out == "" {
				return &FlagError{errors.New("--out: want the pin file to write")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runToolsPin(cmd.Context(), opts)
		},
	}
	addToolsFlags(cmd, opts)
	cmd.Flags().StringVar(&opts.Out, "out", "", "the pin `FILE` to write")
	return cmd
}

// toolHistories reads the logs and returns the servers' histories, only
// --server's when it is given.
func toolHistories(o *toolsOptions) ([]recording.ToolHistory, error) {
	sessions, err := recording.ReadFiles(o.logs())
	if err != nil {
		return nil, &exitCodeError{code: ExitUsage, err: err}
	}
	hs := recording.ToolHistories(sessions)
	if o.Server != "" {
		var names []string
		for _, h := range hs {
			names = append(names, h.Server)
		}
		hs = slices.DeleteFunc(hs, func(h recording.ToolHistory) bool { return h.Server != o.Server })
		if len(hs) == 0 {
			return nil, fmt.Errorf("--server %q: no session of it lists tools; the logs' servers: %s", o.Server, listOrNone(names))
		}
	}
	if len(hs) == 0 {
		return nil, errors.New("no tools/list answer in the logs")
	}
	return hs, nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func runTools(_ context.Context, o *toolsOptions) error {
	hs, err := toolHistories(o)
	if err != nil {
		return err
	}
	if o.JSON {
		for i := range hs {
			if hs[i].Changes == nil {
				hs[i].Changes = []recording.ToolChange{}
			}
		}
		return writeJSON(o.IO.Out, map[string]any{"servers": hs})
	}
	for i, h := range hs {
		if i > 0 {
			fmt.Fprintln(o.IO.Out)
		}
		writeToolHistory(o.IO.Out, &h)
	}
	return nil
}

// writeToolHistory writes a server's tools and changes as text.
func writeToolHistory(w io.Writer, h *recording.ToolHistory) {
	sessions := "1 session"
	if h.Sessions != 1 {
		sessions = fmt.Sprintf("%d sessions", h.Sessions)
	}
	tools := "1 tool"
	if len(h.Latest.Tools) != 1 {
		tools = fmt.Sprintf("%d tools", len(h.Latest.Tools))
	}
	fmt.Fprintf(w, "server %s: %s, as last listed %s (session %s); %s\n",
		h.Server, tools, stamp(h.Latest.UnixMS), h.Latest.Session, sessions)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range h.Latest.Tools {
		kind := ""
		if ro, ok := t.ReadOnly(); ok && ro {
			kind = "read-only"
		} else if ok {
			kind = "writes"
		}
		line := fmt.Sprintf("  %s\t%s\t(%s)", t.Name, kind, strings.Join(t.Inputs(), ", "))
		if d := clipText(t.Description(), 70); d != "" {
			line += "\t" + d
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	if len(h.Changes) == 0 {
		fmt.Fprintln(w, "  no changes")
		return
	}
	fmt.Fprintln(w, "  changes:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range h.Changes {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", stamp(c.UnixMS), c.Session, c.Change.String())
	}
	tw.Flush()
}

// stamp is a time in UTC to the second.
func stamp(unixMS int64) string {
	return time.UnixMilli(unixMS).UTC().Format("2006-01-02 15:04:05Z")
}

// clipText returns s on one line, at most n characters.
func clipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func runToolsPin(_ context.Context, o *toolsOptions) error {
	hs, err := toolHistories(o)
	if err != nil {
		return err
	}
	if len(hs) > 1 {
		var names []string
		for _, h := range hs {
			names = append(names, h.Server)
		}
		return &FlagError{fmt.Errorf("the logs hold %d servers (%s): name one with --server", len(hs), strings.Join(names, ", "))}
	}
	h := hs[0]
	f := &toolpin.File{Pin: toolpin.Version, Server: h.Server, PinnedFrom: h.Latest.Session, PinnedUnixMS: h.Latest.UnixMS, Tools: h.Latest.Tools}
	if err := atomicfile.WriteFile(o.Out, toolpin.Marshal(f), 0o644); err != nil {
		return fmt.Errorf("writing the pin file: %w", err)
	}
	fmt.Fprintf(o.IO.Err, "pinned %d tools of %s, as listed %s (session %s), to %s\n", len(f.Tools), h.Server, stamp(h.Latest.UnixMS), h.Latest.Session, o.Out)
	return nil
}
