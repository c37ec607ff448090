package mcpcli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hoist-mcp/hoist/internal/cmdutil"
)

// suggestFlag is hoist-mcp's flag error function: cmdutil's, plus a
// did-you-mean for an unknown flag close to one of hoist-mcp's (within two
// edits, or a prefix of it), as cobra gives hoist a mistyped command's.
func suggestFlag(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return cmdutil.FlagErrorFunc(cmd, err)
	}
	var near []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && (editDistance(name, f.Name) <= 2 || len(name) > 2 && strings.HasPrefix(f.Name, name)) {
			near = append(near, "\t--"+f.Name)
		}
	})
	if len(near) == 0 {
		return cmdutil.FlagErrorFunc(cmd, err)
	}
	return &cmdutil.FlagError{Err: fmt.Errorf("%w\n\nDid you mean this?\n%s", err, strings.Join(near, "\n"))}
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
