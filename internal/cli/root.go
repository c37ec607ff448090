// Package cli is the command tree of hoist: one file per command, each an
// options struct, a newCmdX that checks flags, and a runX that does the work.
// NewRoot wires the commands; exit codes and error printing are decided in
// one place, Main.
package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/internal/buildinfo"
	"github.com/hoist-mcp/hoist/internal/cmdutil"
	"github.com/hoist-mcp/hoist/internal/iostreams"
)

// Exit codes of hoist.
const (
	ExitOK    = 0
	ExitError = 1                 // the work failed
	ExitUsage = cmdutil.ExitUsage // bad flags or arguments
)

// FlagError is a usage mistake; Main prints it with a hint and exits 2, as
// cmdutil.FlagError in the other programs.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// exitCodeError carries an exit code other than 1 out of a command.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitCodeError) Unwrap() error { return e.err }

// Factory holds what every command shares: the streams.
type Factory struct {
	IO iostreams.Streams
}

// The groups of commands in hoist --help, in the order of the data's path.
var groups = []*cobra.Group{
	{ID: "record", Title: "Recording and the episode store:"},
	{ID: "flows", Title: "Learning and reviewing flows:"},
	{ID: "measure", Title: "Measuring what a flow saves:"},
}

// NewRoot returns the hoist command tree. Each command is added here,
// explicitly, with no runF: tests build a command with their own.
func NewRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "hoist <command> [flags]",
		Short: "Learn the lookups an agent always makes next, and make them for it",
		Long: `hoist turns the session logs that hoist-mcp records into episodes, learns
from them which read-only lookups an agent makes after each call (a flow),
and measures what serving them saves.

The loop: hoist-mcp --record DIR records sessions; hoist learn --sessions
DIR ingests them into the store DIR/hoist.db and writes a flow; hoist
flow-show renders it for review; hoist-mcp --flow FILE serves it (with
--flow-shadow it only decides and logs); hoist audit, promote, evaluate and
drift say what serving it saved, what it cost, and when to learn it again;
hoist guards says which of the agent's writes the policy rules of
hoist-mcp --guards would refuse.
Every command that reads sessions takes --sessions DIR, or --store PATH for
a store you ingested into yourself.

Run 'hoist <command> --help' for a command's manual, and
'hoist completion bash' (zsh, fish, powershell) for shell completion.`,
		Example: `  # Put the proxy in front of a server, recording every session:
  hoist init --domain orders -- npx -y some-mcp-server

  # Learn a flow from what was recorded, and read it:
  hoist learn --sessions ~/.hoist/logs --domain orders --out orders.flow.json
  hoist flow-show orders.flow.json

  # What it would have saved in the same sessions:
  hoist audit --flow orders.flow.json --sessions ~/.hoist/logs`,
		Version:       buildinfo.Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.Err)
	root.SetIn(f.IO.In)
	root.SetVersionTemplate("hoist {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &FlagError{err} })
	root.AddGroup(groups...)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add("record",
		newCmdInit(f, nil),
		newCmdIngest(f, nil),
		newCmdSessions(f, nil, nil),
		newCmdExport(f, nil),
		newCmdRedact(f, nil),
		newCmdDiff(f, nil),
		newCmdTools(f, nil, nil),
	)
	add("flows",
		newCmdLearn(f, nil),
		newCmdCompile(f, nil),
		newCmdFlowShow(f, nil),
		newCmdFlow(f),
		newCmdPromote(f, nil),
	)
	add("measure",
		newCmdAudit(f, nil),
		newCmdReplay(f, nil),
		newCmdEvaluate(f, nil),
		newCmdDrift(f, nil),
		newCmdGuards(f, nil),
		newCmdConfirm(f, nil),
		newCmdConsole(f, nil),
	)
	// cobra's completion command, made now rather than at Execute, so that
	// an unknown shell is a usage mistake and not its help with exit 0.
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c.Name() == "completion" {
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	return root
}

// Main runs hoist with args (without the program name) and returns the exit
// code.
func Main(ctx context.Context, args []string, st iostreams.Streams) int {
	root := NewRoot(&Factory{IO: st})
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	var fe *FlagError
	var ec *exitCodeError
	switch {
	case err == nil:
	case errors.As(err, &fe):
		err = &cmdutil.FlagError{Err: err}
	case errors.As(err, &ec):
		err = &cmdutil.ExitError{Code: ec.code, Err: ec.err}
	}
	return cmdutil.Exit(st.Err, "hoist", cmd, err, ExitError)
}
