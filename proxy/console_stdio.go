package proxy

import (
	"io"
	"path/filepath"
	"strings"

	"github.com/hoist-mcp/hoist/mcplog"
)

// The stdio and --upstream transports' hooks for --console, each a no-op
// without it, so that the relay path without --console is the one it
// always was. --listen gives each session an attachment of its own
// (listen.go, listen_session.go).

// startConsole starts attaching to the console, when --console is given:
// out is the host's writer, gate the server's.
func (s *session) startConsole(out io.Writer, gate *lineGate) {
	o := s.opts.Console
	if o == nil {
		return
	}
	c := newConsoleClient(*o, s.consoleSession(), s.opts.serverName(), s.rec, s.d.say)
	c.toHost = func(line []byte) { out.Write(line) }
	c.toSrv = func(line []byte) { gate.writeLine(line) }
	s.console = c
	c.start()
}

// consoleSession names the session to the console: its log's name, else
// the host's session.
func (s *session) consoleSession() string {
	if s.rec != nil {
		return strings.TrimSuffix(filepath.Base(s.rec.Path()), ".jsonl")
	}
	return mcplog.HostSession(s.opts.Getenv)
}

// serverName is the server's name as the console shows it: --server-name,
// else --domain.
func (o *Options) serverName() string {
	if o.ServerName != "" {
		return o.ServerName
	}
	return o.Domain
}

// consoleHost puts the console's hold in front of the host pump's
// intercept.
func (s *session) consoleHost(p *pump) {
	if s.console != nil {
		p.intercept = s.console.hostIntercept(p.intercept)
	}
}

// consoleServer puts the console's hold in front of the server pump's
// intercept.
func (s *session) consoleServer(p *pump) {
	if s.console != nil {
		p.intercept = s.console.serverIntercept(p.intercept)
	}
}

// closeConsole stops attaching and continues whatever is held.
func (s *session) closeConsole() {
	if s.console != nil {
		s.console.close()
	}
}
