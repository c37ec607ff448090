package cmdutil

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// SingleDashLongFlags rewrites the single-dash spelling of cmd's long flags
// (-think 0, -json, -param=a=b) to the double-dash one, and returns the new
// argument list; args itself is not changed.
//
// hoist-procedure once parsed its flags with Go's flag package, which
// takes -name and --name alike, and scripts were written either way. pflag
// reads -think as the shorthands -t -h -i -n -k -e, so the old spelling is
// normalized before parsing; it stays out of --help, a hidden alias. Only
// the names of cmd's own flags (help included) are rewritten, so an unknown
// -x is still reported as an unknown flag. A flag's value and every
// argument after -- are left alone. It is for commands that take flags
// among their arguments (pflag's default): with SetInterspersed(false) it
// would rewrite arguments that pflag passes on untouched.
func SingleDashLongFlags(cmd *cobra.Command, args []string) []string {
	cmd.InitDefaultHelpFlag()
	fs := cmd.Flags()
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case len(a) < 2 || a[0] != '-':
			out = append(out, a) // a positional argument
			continue
		}
		body := strings.TrimPrefix(a[1:], "-")
		name, _, inline := strings.Cut(body, "=")
		long := strings.HasPrefix(a, "--")
		f := fs.Lookup(name)
		if !long {
			if f != nil && len(name) > 1 {
				a = "-" + a // -think → --think
			} else {
				f = valueShorthand(cmd, body)
			}
		}
		out = append(out, a)
		if f != nil && f.NoOptDefVal == "" && !inline && i+1 < len(args) {
			i++
			out = append(out, args[i]) // the flag's value, whatever it looks like
		}
	}
	return out
}

// valueShorthand returns the shorthand of a run such as -qo whose value is
// the next argument: the first one that takes a value, when it ends the run
// (in -ofile the value is "file").
func valueShorthand(cmd *cobra.Command, run string) *pflag.Flag {
	for j := 0; j < len(run); j++ {
		f := cmd.Flags().ShorthandLookup(run[j : j+1])
		switch {
		case f == nil:
			return nil
		case f.NoOptDefVal == "":
			if j == len(run)-1 {
				return f
			}
			return nil
		}
	}
	return nil
}
