package proxy

import (
	"io"
	"path/filepath"
	"strings"

	"github.com/hoist-mcp/hoist/mcplog"
)

// The stdio transport's hooks for --console, each a no-op without it, so
// that the relay path without --console is the one it always was.

// startConsole starts attaching to the console, when --console is given:
// out is the host's writer, gate the server's.
func (s *session) startConsole(out io.Writer, gate *lineGate) {
	o := s.opts.Console
	if o == nil {
		return
	}
	id := mcplog.HostSession(s.opts.Getenv)
	if s.rec != nil {
		id = strings.TrimSuffix(filepath.Base(s.rec.Path()), ".jsonl")
	}
	server := s.opts.ServerName
	if server == "" {
		server = s.opts.Domain
	}
	c := newConsoleClient(*o, id, server, s.rec, s.d.say)
	c.toHost = func(line []byte) { out.Write(line) }
	c.toSrv = func(line []byte) { gate.writeLine(line) }
	s.console = c
	c.start()
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
