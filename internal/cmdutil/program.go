package cmdutil

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/internal/buildinfo"
)

// Program is the frame of a hoist program whose own command takes
// arguments (hoist-mcp, hoist-procedure, hoist-mcp-demo): the flags every
// such program has, --completion SHELL and --version, and the way it is
// run.
type Program struct {
	Name string    // the program's name, as its messages begin
	Out  io.Writer // where completion scripts and the version go

	completion string
	version    bool
}

// Frame sets cmd up as one of hoist's commands: cobra's own printing of
// errors and usage is off (Exit says what went wrong, once), the streams
// are in, out and errw, and a flag that does not parse is a FlagError.
func Frame(cmd *cobra.Command, in io.Reader, out, errw io.Writer) {
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	cmd.SetIn(in)
	cmd.SetOut(out)
	cmd.SetErr(errw)
	cmd.SetFlagErrorFunc(FlagErrorFunc)
}

// AddFlags adds --completion and --version to cmd's flags; call it after
// the command's own, so that --help lists them last.
func (p *Program) AddFlags(cmd *cobra.Command) {
	AddCompletionFlag(cmd, &p.completion)
	cmd.Flags().BoolVar(&p.version, "version", false, "print the version and exit")
}

// Answered answers --completion or --version when either was given, before
// the command checks anything else: done says it did, and err is what
// writing the answer returned.
func (p *Program) Answered(cmd *cobra.Command) (done bool, err error) {
	switch {
	case p.completion != "":
		return true, WriteCompletion(cmd, p.completion, p.Out)
	case p.version:
		_, err := fmt.Fprintf(p.Out, "%s %s\n", p.Name, buildinfo.Version())
		return true, err
	}
	return false, nil
}

// Execute runs cmd, one of program prog's commands, with args (without
// the program name) and returns the exit code Exit decides: fail for a
// failure that names no code of its own.
func Execute(ctx context.Context, cmd *cobra.Command, args []string, errw io.Writer, prog string, fail int) int {
	cmd.SetArgs(args)
	ran, err := cmd.ExecuteContextC(ctx)
	return Exit(errw, prog, ran, err, fail)
}

// SplitAtDash splits cmd's arguments at the -- that the command line had,
// if any: the arguments before it, and the command after it (nil without
// a --).
func SplitAtDash(cmd *cobra.Command, args []string) (before, command []string) {
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		return args[:dash], args[dash:]
	}
	return args, nil
}
