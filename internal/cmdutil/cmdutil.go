// Package cmdutil holds what the command lines of hoist's four programs
// share, so that each says a usage mistake, a failure and an exit code the
// same way: the flag error that means exit 2, the one function that turns a
// command's error into a message and an exit code, shell completion for the
// programs that have no subcommands, and the old single-dash spelling of
// long flags.
//
// It imports cobra and pflag and nothing heavier: hoist-mcp links it, and
// the proxy's binary must not carry the toolkit's SQLite or Arrow.
package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// ExitUsage is the exit code of a usage mistake in every hoist program.
const ExitUsage = 2

// FlagError is a usage mistake: a flag or argument that cannot be right
// whatever the input. Exit prints it with a pointer to --help and exits 2.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// FlagErrorf returns a FlagError with a formatted message.
func FlagErrorf(format string, a ...any) error {
	return &FlagError{fmt.Errorf(format, a...)}
}

// FlagErrorFunc makes cobra's own flag-parsing errors (an unknown flag, a
// value that does not parse) FlagErrors; give it to SetFlagErrorFunc.
func FlagErrorFunc(_ *cobra.Command, err error) error { return &FlagError{err} }

// ExitError ends a program with Code. Err, when there is one, is printed
// first; without it nothing is, because the program has already said what
// there was to say (a report, a proxied server's own exit status).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Exit prints err for program prog on w and returns the exit code, the one
// place each program decides both:
//
//   - nil is 0;
//   - a FlagError, or one of cobra's own argument errors, is printed with
//     "Run '<command> --help' for usage." and is ExitUsage;
//   - an ExitError exits with its code, printed when its message is not
//     empty (a concrete type: *exec.ExitError has an ExitCode method too,
//     and a server's exit status is not the program's);
//   - anything else is printed and exits with fail.
//
// cmd is the command that ran, as ExecuteC returns it, for the hint; a
// joined error (errors.Join) is printed one line per error.
func Exit(w io.Writer, prog string, cmd *cobra.Command, err error, fail int) int {
	if err == nil {
		return 0
	}
	var fe *FlagError
	var ee *ExitError
	switch {
	case errors.As(err, &fe) || IsUsage(err):
		path := prog
		if cmd != nil {
			path = cmd.CommandPath()
		}
		printError(w, prog, err)
		fmt.Fprintf(w, "Run '%s --help' for usage.\n", path)
		return ExitUsage
	case errors.As(err, &ee):
		printError(w, prog, err)
		return ee.Code
	default:
		printError(w, prog, err)
		return fail
	}
}

func printError(w io.Writer, prog string, err error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			printError(w, prog, e)
		}
		return
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintf(w, "%s: %s\n", prog, msg)
	}
}

// IsUsage recognizes the argument errors cobra makes itself, before a
// command runs: an unknown subcommand, or the wrong number of arguments
// (cobra.NoArgs, ExactArgs and the like). Flag errors reach FlagErrorFunc
// instead. Only the start of the message counts, so a command's own error
// that merely mentions "invalid argument" (EINVAL) is not taken for one.
func IsUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command ", "invalid argument ", "accepts ", "requires at least "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
