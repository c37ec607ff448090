// Package cli is the command tree of hoist: one file per command, each an
// options struct, a newCmdX that checks flags, and a runX that does the work.
// Exit codes and error printing are decided here, in Main.
package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/internal/buildinfo"
	"github.com/hoist-mcp/hoist/internal/iostreams"
)

// Exit codes of hoist.
const (
	ExitOK    = 0
	ExitError = 1 // the work failed
	ExitUsage = 2 // bad flags or arguments
)

// FlagError is a usage mistake; Main prints it with a hint and exits 2.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// exitCodeError carries an exit code other than 1 out of a command.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string { return e.err.Error() }
func (e *exitCodeError) Unwrap() error { return e.err }

// Factory holds what every command shares: the streams.
type Factory struct {
	IO iostreams.Streams
}

// commands lists the constructors of hoist's subcommands; each command file
// adds its own in an init function.
var commands []func(f *Factory) *cobra.Command

// NewRoot returns the hoist command tree.
func NewRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "hoist <command> [flags]",
		Short: "Learn the lookups an agent always makes next, and make them for it",
		Long: `hoist turns the session logs that hoist-mcp records into episodes, learns
from them which read-only lookups an agent makes after each call, and
measures what serving them saves.`,
		Version:       buildinfo.Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.Err)
	root.SetIn(f.IO.In)
	root.SetVersionTemplate("hoist {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &FlagError{err} })
	for _, c := range commands {
		root.AddCommand(c(f))
	}
	return root
}

// Main runs hoist with args (without the program name) and returns the exit
// code.
func Main(ctx context.Context, args []string, st iostreams.Streams) int {
	root := NewRoot(&Factory{IO: st})
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var fe *FlagError
	var ec *exitCodeError
	switch {
	case errors.As(err, &fe) || isCobraUsage(err):
		fmt.Fprintf(st.Err, "hoist: %v\nRun '%s --help' for usage.\n", err, cmd.CommandPath())
		return ExitUsage
	case errors.As(err, &ec):
		if ec.err != nil && ec.err.Error() != "" {
			fmt.Fprintf(st.Err, "hoist: %v\n", ec.err)
		}
		return ec.code
	default:
		fmt.Fprintf(st.Err, "hoist: %v\n", err)
		return ExitError
	}
}

// isCobraUsage recognizes the argument errors cobra makes itself.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "requires at most", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
