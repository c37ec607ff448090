package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/redact"
)

// redactOptions are hoist redact's inputs.
type redactOptions struct {
	IO       iostreams.Streams
	Sessions string
	Out      string
	KeyFile  string
	Quiet    bool
}

func newCmdRedact(f *Factory, runF func(context.Context, *redactOptions) error) *cobra.Command {
	opts := &redactOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "redact --sessions DIR --out DIR2 [--key-file FILE]",
		Short: "Write a pseudonymized copy of session logs to share",
		Long: `hoist redact copies the session logs under --sessions (and their
.context.jsonl, .flow.jsonl and .meta.json sidecars) to --out with every value
that came from a person or a tool replaced by a pseudonym of the same shape:
tool arguments, tool results (inside the JSON text they carry, too), the
conversation, error messages. hoist learn learns the same flow from the copy
as from the original: the same sites, counts and binding paths.

The same value gets the same pseudonym in every file: each run of letters or
digits is mapped by a keyed permutation (HMAC-SHA256 in a Feistel network)
to a run of the same length and class. So an email stays an email (its local
part and domain name pseudonymized, its top-level domain kept), an id keeps
its punctuation, its type tag and the words of tool and argument names
(user_15 becomes user_83, #W15a becomes #W71c), digits stay digits and
numbers stay numbers with as many digits, names keep their capitals, phone
numbers, addresses and zip codes their shape. Common English words are kept,
so the conversation keeps its grammar. Two values are equal in the copy
exactly when they were equal in the original.

Kept: tool and argument names, JSON keys and structure, methods, JSON-RPC
ids, times, the servers' initialize and tools/list answers, the session-log
headers and .meta.json sidecars. Other files are skipped and listed.

The key comes from --key-file (hex, or at least 16 bytes). Without it a
random key is drawn and written to DIR2/redact.key (mode 0600): keep it to
redact more sessions consistently later, and remove it from the copy before
sharing, since whoever holds it can test guesses. The key is never printed.

DIR2/redact-manifest.json says what was replaced, by kind, and how many.
The copy is written to a temporary directory beside DIR2 and renamed into
place, so DIR2 is whole or absent; DIR2 must not exist or be empty.

Exit codes: 0 done; 1 failed (nothing written); 2 bad flags or arguments.`,
		Example: `  hoist redact --sessions ~/.hoist/logs --out /tmp/share
  hoist redact --sessions ~/.hoist/logs --out /tmp/share2 --key-file ~/.hoist/redact.key
  hoist learn --sessions /tmp/share --domain retail -o retail.flow.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Sessions == "" {
				return &FlagError{errors.New("--sessions: want the directory of session logs")}
			}
			if opts.Out == "" {
				return &FlagError{errors.New("--out: want a directory for the copy")}
			}
			a, _ := filepath.Abs(opts.Sessions)
			b, _ := filepath.Abs(opts.Out)
			if a == b || strings.HasPrefix(b, a+string(filepath.Separator)) {
				return &FlagError{errors.New("--out: want a directory outside --sessions")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRedact(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Sessions, "sessions", "", "copy the session logs under `DIR` (recursively)")
	fl.StringVar(&opts.Out, "out", "", "write the copy to `DIR2` (must not exist, or be empty)")
	fl.StringVar(&opts.KeyFile, "key-file", "", "read the key from `FILE` (default: a new random key, written to DIR2/redact.key)")
	fl.BoolVarP(&opts.Quiet, "quiet", "q", false, "say nothing on success")
	return cmd
}

func runRedact(ctx context.Context, o *redactOptions) error {
	var opt redact.Options
	if o.KeyFile != "" {
		k, err := redact.ReadKey(o.KeyFile)
		if err != nil {
			return err
		}
		opt.Key = k
	}
	m, err := redact.Dir(ctx, o.Sessions, o.Out, opt)
	if err != nil {
		return err
	}
	for _, s := range m.Skipped {
		fmt.Fprintf(o.IO.Err, "hoist: skipped %s: %s\n", s.File, s.Reason)
	}
	if o.Quiet {
		return nil
	}
	total := 0
	kinds := make([]string, 0, len(m.Replaced))
	for k, n := range m.Replaced {
		total += n
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, m.Replaced[k]))
	}
	fmt.Fprintf(o.IO.Err, "hoist: wrote %d session logs, %d context, %d flow logs and %d meta files to %s; replaced %d values (%s); manifest %s\n",
		m.Files["session"], m.Files["context"], m.Files["flow"], m.Files["meta"], o.Out, total, strings.Join(parts, ", "),
		filepath.Join(o.Out, redact.ManifestName))
	if m.Key == "generated" {
		fmt.Fprintf(o.IO.Err, "hoist: the key is in %s (mode 0600): keep it to redact more sessions consistently (--key-file), and remove it before sharing the copy\n",
			filepath.Join(o.Out, redact.KeyName))
	}
	return nil
}
