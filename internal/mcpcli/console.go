package mcpcli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/hoist-mcp/hoist/proxy"
)

// consoleHelp is --help's paragraph on --console.
const consoleHelp = `The console. --console ADDR attaches the session to a running hoist
console at ADDR (host:port), whose Holds page can hold the session's frames:
a request or tool under a breakpoint before the server sees it, its answer
before the host does, an error, or the third identical call in a row of one
tool (the loop hold). A held frame is continued, injected (the host gets the
value as the result, and the server nothing), retried or aborted (the host
gets error -32099). Each verdict names the digest of the frame it decides;
one that names another frame releases nothing, and the frame is held again.
The proxy keeps trying to attach while the console is
not there, and holds nothing meanwhile; when the console goes, every held
frame is continued unchanged. The server's own requests to the host
(sampling, elicitation) and notifications are held at a method breakpoint
too, before the host sees them; an injected answer goes back to the server.
--wait-for-attach makes the host's first line wait until a console has
attached (so that even initialize can be held), saying so on stderr.
--console-token-file sends the console's --token-file token. With --listen
each session attaches on its own; with --upstream the one session does.`

// consoleFlags are --console's flags.
type consoleFlags struct {
	addr      string
	tokenFile string
	wait      bool
}

func addConsoleFlags(fl *pflag.FlagSet, c *consoleFlags) {
	fl.StringVar(&c.addr, "console", "", "attach to the hoist console at `ADDR` (host:port), where a person may hold this session's frames")
	fl.StringVar(&c.tokenFile, "console-token-file", "", "send the console the bearer token in `FILE` (its --token-file)")
	fl.BoolVar(&c.wait, "wait-for-attach", false, "with --console, forward the host's first line only once a console has attached")
}

// validateConsole checks --console and sets o.Proxy.Console.
func validateConsole(o *options) error {
	c := o.console
	if c.addr == "" {
		if c.tokenFile != "" {
			return errors.New("--console-token-file: needs --console")
		}
		if c.wait {
			return errors.New("--wait-for-attach: needs --console")
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(c.addr); err != nil {
		return fmt.Errorf("--console %s: want host:port (%v)", c.addr, err)
	}
	co := &proxy.ConsoleOptions{Addr: c.addr, WaitForAttach: c.wait}
	if c.tokenFile != "" {
		b, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return fmt.Errorf("--console-token-file: %w", err)
		}
		co.Token = strings.TrimSpace(string(b))
		if co.Token == "" {
			return fmt.Errorf("--console-token-file %s: the file is empty", c.tokenFile)
		}
	}
	o.Proxy.Console = co
	return nil
}
