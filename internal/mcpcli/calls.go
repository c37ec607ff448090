package mcpcli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/hoist-mcp/hoist/proxy"
	"github.com/hoist-mcp/hoist/toolpin"
)

// callsHelp is --help's paragraphs on what stands between the agent's
// calls and the server whatever the domain: pinned tools and limits.
const callsHelp = `Pinned tools. --pin-tools FILE compares each tools/list answer with the
definitions in FILE (written by hoist tools pin): for a pinned tool listed
with another description, inputSchema, outputSchema, annotations or title,
stderr names the tool and the members that changed. --pin-tools-action
says what else is done: warn (the default) nothing; hide removes the tool
from the tools/list answer the host sees (the proxy answers it) and refuses
its calls with a tool error until a listing shows the pinned definition
again; hold refuses every further tools/call of the session, of any tool.
--pin-tools-new does the same for a tool the file does not pin (warn by
default). notifications/tools/list_changed goes on to the host, and with
hide or hold the proxy lists the tools itself at once; the calls and
batches sent meanwhile wait for that listing. A flow's own lookups (--flow)
are held to the same pins (docs/tools.md).

Limits. --limit TOOL=N/PERIOD lets at most N calls of TOOL through in any
PERIOD (s, m, h, or a duration such as 10s or 1m30s): N may go at once, then
one more every PERIOD/N. --limit '*=N/PERIOD' counts every call of any tool
together; give --limit once per rule, and a call must pass each that counts
it. --max-calls N is the session's budget: after N calls reached the
server, every further call is refused. A call over a limit never reaches
the server: the agent gets an error result naming the limit and when it
frees, the session log records that answer as the proxy's, the guards log
(<session>.guards.jsonl beside the session log, kept with --record even
without --guards) has a line for it beside the guards' checks, and stderr
says so (docs/limits.md).`

// callsFlags are the flags of callsHelp.
type callsFlags struct {
	limits     []string
	maxCalls   int
	pinFile    string
	pinChanged string
	pinNew     string
}

func addCallsFlags(fl *pflag.FlagSet, c *callsFlags) {
	fl.StringVar(&c.pinFile, "pin-tools", "", "compare each tools/list answer with the definitions pinned in `FILE` (from hoist tools pin), and say which tool and member changed")
	fl.StringVar(&c.pinChanged, "pin-tools-action", "warn", "what to do about a pinned tool whose definition changed, `ACTION` warn, hide (drop it from the host's tools/list and refuse its calls) or hold (refuse every further call)")
	fl.StringVar(&c.pinNew, "pin-tools-new", "warn", "what to do about a listed tool the pin file lacks, `ACTION` warn, hide or hold")
	fl.StringArrayVar(&c.limits, "limit", nil, "let at most N calls of TOOL reach the server in any PERIOD (`TOOL=N/PERIOD`, PERIOD s, m, h or like 10s; TOOL * counts every call; repeatable)")
	fl.IntVar(&c.maxCalls, "max-calls", 0, "refuse every call after the session's first `N` reached the server (0: no budget)")
}

// validateCalls checks the flags of callsHelp and sets o.Proxy.Pins and
// o.Proxy.Limits. The pin file is read here, as --listen-token-file is: a
// file that cannot be read or is not a pin file is a usage mistake.
func validateCalls(o *options, changed func(string) bool) error {
	c := o.calls
	if err := validatePins(o, changed); err != nil {
		return err
	}
	if c.maxCalls < 0 {
		return errors.New("--max-calls: must be 0 or more")
	}
	if len(c.limits) == 0 && c.maxCalls == 0 {
		return nil
	}
	l := &proxy.LimitsOptions{MaxCalls: c.maxCalls}
	for _, s := range c.limits {
		r, err := proxy.ParseLimit(s)
		if err != nil {
			return fmt.Errorf("--limit %w", err)
		}
		l.Rules = append(l.Rules, r)
	}
	o.Proxy.Limits = l
	return nil
}

// validatePins checks --pin-tools and the flags under it.
func validatePins(o *options, changed func(string) bool) error {
	c := o.calls
	if c.pinFile == "" {
		for _, name := range []string{"pin-tools-action", "pin-tools-new"} {
			if changed(name) {
				return fmt.Errorf("--%s: needs --pin-tools", name)
			}
		}
		return nil
	}
	onChange, err := proxy.ParsePinAction(c.pinChanged)
	if err != nil {
		return fmt.Errorf("--pin-tools-action %w", err)
	}
	onNew, err := proxy.ParsePinAction(c.pinNew)
	if err != nil {
		return fmt.Errorf("--pin-tools-new %w", err)
	}
	path, err := proxy.ExpandHome(c.pinFile)
	if err != nil {
		return fmt.Errorf("--pin-tools: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--pin-tools: %w", err)
	}
	f, err := toolpin.Read(b)
	if err != nil {
		return fmt.Errorf("--pin-tools %s: %w", c.pinFile, err)
	}
	o.Proxy.Pins = &proxy.PinsOptions{File: c.pinFile, Tools: f.Tools, Changed: onChange, Added: onNew}
	return nil
}
