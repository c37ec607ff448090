package cmdutil

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Shells are the shells cobra writes completion scripts for.
var Shells = []string{"bash", "zsh", "fish", "powershell"}

// CompletionFlagHelp is the --completion flag's help line.
const CompletionFlagHelp = "print the completion script for `SHELL` (bash, zsh, fish or powershell) and exit"

// AddCompletionFlag gives a program without subcommands a --completion
// SHELL flag. hoist has `hoist completion SHELL`, but hoist-mcp,
// hoist-procedure and hoist-mcp-demo take positional arguments (a server
// command, a procedure file) that a "completion" subcommand would collide
// with; a flag cannot. Program.AddFlags adds it and Program.Answered
// answers it, before the command checks anything else.
func AddCompletionFlag(cmd *cobra.Command, shell *string) {
	cmd.Flags().StringVar(shell, "completion", "", CompletionFlagHelp)
	_ = cmd.RegisterFlagCompletionFunc("completion", cobra.FixedCompletions(Shells, cobra.ShellCompDirectiveNoFileComp))
}

// CheckShell returns a FlagError unless shell is one of Shells.
func CheckShell(shell string) error {
	for _, s := range Shells {
		if s == shell {
			return nil
		}
	}
	return FlagErrorf("--completion %q: want %s", shell, strings.Join(Shells, ", "))
}

// WriteCompletion writes cmd's completion script for shell to w. The script
// asks the program itself for completions (cobra's hidden __complete
// argument), so flags and their values complete as --help lists them.
func WriteCompletion(cmd *cobra.Command, shell string, w io.Writer) error {
	if err := CheckShell(shell); err != nil {
		return err
	}
	root := cmd.Root()
	var err error
	switch shell {
	case "bash":
		err = root.GenBashCompletionV2(w, true)
	case "zsh":
		err = root.GenZshCompletion(w)
	case "fish":
		err = root.GenFishCompletion(w, true)
	case "powershell":
		err = root.GenPowerShellCompletionWithDesc(w)
	}
	if err != nil {
		return fmt.Errorf("writing the %s completion script: %w", shell, err)
	}
	return nil
}

// IsCompletionRequest reports whether args are a shell's request for
// completions (cobra's hidden __complete argument, which the scripts send),
// whose answer goes to standard output even in hoist-mcp, where help goes to
// stderr because stdout is the MCP wire.
func IsCompletionRequest(args []string) bool {
	return len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd)
}
