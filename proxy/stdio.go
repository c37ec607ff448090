package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/telemetry"
)

// drainGrace is how long the proxy waits on the server's stdout and stderr
// with nothing coming after the server exited: a grandchild that inherited
// them may keep them open long after. While the server's last lines are
// still being read and forwarded (a large one takes a while on a loaded
// machine), the proxy keeps waiting.
const drainGrace = 2 * time.Second

// idleReader notes when its reader is blocked in Read, so that the drain
// after the server's exit stops a read that waits on nothing, and never a
// pump busy with lines it has read.
type idleReader struct {
	r       io.Reader
	waiting atomic.Int64 // when the current Read began (UnixNano); 0 outside Read
}

func (w *idleReader) Read(p []byte) (int, error) {
	w.waiting.Store(time.Now().UnixNano())
	n, err := w.r.Read(p)
	w.waiting.Store(0)
	return n, err
}

// idleFor returns how long the current Read has waited; 0 outside Read.
func (w *idleReader) idleFor() time.Duration {
	if at := w.waiting.Load(); at != 0 {
		return time.Since(time.Unix(0, at))
	}
	return 0
}

// drainWait waits for done, and once the reader has waited drainGrace in
// one Read with nothing to read, ends that read with the deadline.
func drainWait(done <-chan struct{}, w *idleReader, deadline func()) {
	timer := time.NewTimer(drainGrace)
	defer timer.Stop()
	for {
		select {
		case <-done:
			return
		case <-timer.C:
			idle := w.idleFor()
			if idle >= drainGrace {
				deadline()
				<-done
				return
			}
			timer.Reset(drainGrace - idle)
		}
	}
}

// stderrTail is how many lines of the server's stderr an early-exit message
// quotes (the peer proxy's "When the server misbehaves").
const stderrTail = 40

// RunStdio proxies one session between the host on st and the server that
// o.Command starts, and returns the proxy's exit code: the server's status
// (128+n for signal n), ExitProxy when the proxy itself failed. Cancelling
// ctx ends the session as the host closing stdin does.
//
// RunStdio returns once the server has exited and its output is forwarded.
// The goroutine reading st.In may still be blocked in Read then, until st.In
// returns; a process exits past it, and tests close their pipe.
func RunStdio(ctx context.Context, o Options, st Streams) int {
	o.setDefaults()
	if len(o.Command) == 0 && o.Upstream == "" {
		fmt.Fprintln(st.Err, "hoist-mcp: no server command after --")
		return ExitUsage
	}
	s := &session{opts: o, d: &diag{w: st.Err}}
	start := o.Now()
	s.tel = o.Telemetry.Session(mcplog.SessionID(start, os.Getpid()), telemetry.Pipe)
	defer s.tel.Close()

	pruned, pruneErr := 0, error(nil)
	if o.Record != "" {
		if err := recordDir(o.Record); err != nil {
			s.d.say("%v", err)
			return ExitProxy
		}
		if o.RetainDays > 0 {
			pruned, pruneErr = Prune(o.Record, o.RetainDays, start)
		}
		id := mcplog.SessionID(start, os.Getpid())
		h := mcplog.Header{
			Log:           mcplog.Version,
			Session:       id,
			StartedUnixMS: start.UnixMilli(),
			ServerCommand: mcplog.ScrubCommand(o.Command),
			Domain:        mcplog.StringOrNil(o.Domain),
			AgentModel:    mcplog.StringOrNil(o.AgentModel),
			HostSession:   mcplog.HostSession(o.Getenv),
			ServerName:    o.ServerName,
		}
		if o.Upstream != "" {
			h.ServerCommand = []string{}
			h.Upstream = mcplog.ScrubURL(o.Upstream)
		}
		rec, err := mcplog.Create(filepath.Join(o.Record, id+".jsonl"), h, start)
		if err != nil {
			s.d.say("%v", err)
			return ExitProxy
		}
		s.rec = rec
	}
	if o.Context != "" {
		// Read with or without a log: flows and guards read the
		// conversation whether or not it is recorded.
		name := mcplog.HostSession(o.Getenv)
		if o.Getenv("HOIST_SESSION") == "" {
			name = mcplog.SessionID(start, os.Getpid())
		}
		s.context = &contextTail{path: SessionPath(o.Context, name)}
	}

	if o.Upstream != "" {
		if s.rec != nil {
			s.d.say("recording to %s", s.rec.Path())
			if pruneErr != nil {
				s.d.say("warning: %v", pruneErr)
			}
		}
		if o.activeMode() {
			if err := s.startFlow(start); err != nil {
				s.d.say("%v", err)
			}
		}
		return s.runUpstream(ctx, st)
	}

	var errFile *os.File
	if o.InheritStderr {
		errFile = st.ErrFile
		if errFile == nil {
			errFile = os.Stderr
		}
	}
	c, err := startChild(o.Command, errFile)
	if err != nil {
		if s.rec != nil {
			s.rec.Close()
			os.Remove(s.rec.Path())
		}
		s.d.say("%v", err)
		return ExitProxy
	}
	s.child = c
	if s.rec != nil {
		s.d.say("recording to %s", s.rec.Path())
		if pruneErr != nil {
			s.d.say("warning: %v", pruneErr)
		}
		if pruned > 0 {
			s.d.say("deleted %d session file(s) older than %d days from %s", pruned, o.RetainDays, o.Record)
		}
	}
	if o.activeMode() {
		if err := s.startFlow(start); err != nil {
			s.d.say("%v", err)
		}
	}
	return s.run(ctx, st)
}

// startFlow prepares active mode: --flow (the flow server and its log),
// --guards and --commit.
func (s *session) startFlow(start time.Time) error {
	o := s.opts
	server := o.ServerName
	if server == "" {
		server = o.Domain
	}
	var fo FlowOptions
	if o.Flow != nil {
		fo = *o.Flow
	}
	a := newActive(fo, server, s.d.say)
	a.rec, a.context = s.rec, s.context
	a.observe = observer(s.tel)
	a.session = mcplog.HostSession(o.Getenv)
	if o.Getenv("HOIST_SESSION") == "" {
		a.session = mcplog.SessionID(start, os.Getpid())
	}
	s.active = a
	var err error
	if o.Flow != nil {
		var w *mcplog.Writer
		w, err = openFlowLog(o.Flow.Log, s.rec, a.session)
		a.flowLog = w
	}
	return errors.Join(err, a.setUpActive(o, s.rec, s.context, a.session))
}

// session is one proxied session's state.
type session struct {
	opts  Options
	d     *diag
	rec   *mcplog.Writer
	child *child

	answered   atomic.Bool  // the server sent at least one JSON-RPC message
	noise      atomic.Int64 // server stdout lines that were not JSON-RPC
	hostClosed atomic.Bool  // the host closed stdin (or stopped reading)
	rawSaid    [2]atomic.Bool
	tail       tailLines
	context    *contextTail       // --context
	active     *active            // --flow, --guards, --commit
	console    *consoleClient     // --console
	tel        *telemetry.Session // --otel; nil without
}

func (s *session) run(ctx context.Context, st Streams) int {
	c := s.child
	hostDone := make(chan struct{})
	serverDone := make(chan struct{})
	stderrDone := make(chan struct{})

	// Host → server. Serving a flow, the host's lines pass a gate that keeps
	// the proxy's own requests from landing inside one of them; otherwise
	// nothing stands between the pump and the server.
	var toServer io.Writer = c.stdin
	gate := &lineGate{w: c.stdin}
	if s.active != nil || s.opts.Console != nil {
		toServer = gate
	}
	// If the host stops reading, the rest is still read and recorded, so
	// the server never blocks on a full pipe.
	var out io.Writer = &hostWriter{w: st.Out, gone: func() {
		s.hostClosed.Store(true)
		c.stdin.Close()
	}}
	if s.tel != nil && s.serverWhole() {
		// Every line reaches the host whole through out: a span ends when
		// its answer does, not when a flow holds it.
		out = tracedWriter{w: out, t: s.tel}
	}
	s.startConsole(out, gate)
	if s.console != nil && s.tel != nil {
		s.console.observe = s.tel.Hold // before the pumps, the only callers
	}
	go func() {
		defer close(hostDone)
		p := s.newPump(mcplog.FromClient, st.In, toServer, 0)
		if a := s.active; a != nil && a.holdsHost() {
			// --guards and --commit answer some of the host's lines
			// themselves, so each reaches them whole before it goes on.
			p.intercept = func(line []byte) bool { return a.hostLine(jsonrpc.TrimLine(line)) }
		}
		if s.active != nil || s.opts.Console != nil {
			p.tooLong = func(start []byte) { s.refuseTooLong(out, start) }
		}
		s.consoleHost(p)
		err := p.run()
		gate.release()
		var we errWrite
		if err != nil && !errors.As(err, &we) {
			s.d.say("reading from the host: %v", err)
		}
		s.hostClosed.Store(true)
		if a := s.active; a != nil {
			a.hostDone()
		}
		c.stdin.Close()
	}()

	// Server → host.
	serverOut := &idleReader{r: c.stdout}
	a := s.active
	if a != nil {
		a.toHost = func(line []byte) { out.Write(line) }
		a.toServer = func(line []byte) { gate.writeLine(line) }
		a.start()
	}
	go func() {
		defer close(serverDone)
		p := s.newPump(mcplog.FromServer, serverOut, out, 1)
		if a != nil {
			p.intercept = a.fromServer
		}
		s.consoleServer(p)
		if err := p.run(); err != nil {
			s.d.say("reading from the MCP server: %v", err)
		}
		if a != nil {
			a.serverDone()
		}
	}()

	// The server's stderr reaches the host's stderr unchanged; the proxy
	// keeps its last lines for the early-exit message.
	if c.stderr != nil {
		go func() {
			defer close(stderrDone)
			s.copyStderr(c.stderr)
		}()
	} else {
		close(stderrDone)
	}

	exitedFirst := false
	select {
	case <-c.exited:
		exitedFirst = !s.hostClosed.Load()
	case <-hostDone:
		c.stop(s.opts.StopGrace, s.d.say)
	case <-ctx.Done():
		c.stdin.Close()
		c.stop(s.opts.StopGrace, s.d.say)
	}
	<-c.exited
	s.closeConsole() // a frame held now has no server left to wait for

	// Forward what the server still wrote; stop waiting for pipes that a
	// grandchild keeps open, once nothing has come on them for drainGrace.
	drainWait(serverDone, serverOut, func() { c.stdout.SetReadDeadline(time.Now()) })
	timer := time.NewTimer(drainGrace)
	select {
	case <-stderrDone:
	case <-timer.C:
		if c.stderr != nil {
			c.stderr.SetReadDeadline(time.Now())
		}
		<-stderrDone
	}
	timer.Stop()
	c.stdout.Close()
	if c.stderr != nil {
		c.stderr.Close()
	}
	c.stdin.Close()
	// A server that exited first may leave processes it started: they get
	// the steps a server gets (once: the host's leaving took them already).
	c.stop(s.opts.StopGrace, s.d.say)

	if s.active != nil {
		if err := s.active.close(); err != nil {
			s.d.say("%v", err)
		}
	}
	if s.rec != nil {
		if err := s.rec.Close(); err != nil {
			s.d.say("%v", err)
		}
	}
	if n := s.noise.Load(); n > 0 {
		s.d.say("%d line(s) the MCP server wrote to stdout were not JSON-RPC; they were forwarded unchanged (stdout is the MCP wire: servers should log to stderr)", n)
	}
	code := c.exitCode()
	if !s.answered.Load() && (exitedFirst || code != 0) {
		s.earlyExit()
	}
	return code
}

// refuseTooLong answers a host line too long to inspect, which active mode
// did not forward (issue 23): an error to its id, logged as the proxy's.
func (s *session) refuseTooLong(out io.Writer, start []byte) {
	answer, ok := tooLongError(start, s.opts.MaxFrameBytes)
	s.d.say("a line host -> server is longer than --max-frame-bytes (%d); in active mode it is not forwarded, and the host gets an error for it", s.opts.MaxFrameBytes)
	if !ok {
		return
	}
	if s.rec != nil {
		s.rec.Record(mcplog.FromProxy, bytes.Clone(answer))
	}
	out.Write(append(answer, '\n'))
}

// newPump builds the pump of one direction; dir indexes per-direction state.
func (s *session) newPump(from string, src io.Reader, dst io.Writer, dir int) *pump {
	p := &pump{
		from:     from,
		src:      src,
		dst:      dst,
		maxFrame: s.opts.MaxFrameBytes,
		keep:     s.rec != nil || s.opts.Trace || s.active != nil || s.tel != nil,
	}
	direction := "host -> server"
	if from == mcplog.FromServer {
		direction = "server -> host"
	}
	p.onLine = func(line []byte) {
		body := jsonrpc.TrimLine(line)
		if s.tel != nil {
			if from == mcplog.FromClient {
				s.tel.FromHost(body)
			} else {
				s.tel.FromServer(body, !s.serverWhole())
			}
		}
		if s.active != nil && from == mcplog.FromClient && !s.active.holdsHost() {
			s.active.fromHost(body) // held lines go to hostLine instead
		}
		if s.opts.Trace {
			s.d.say("trace %s %d B %s", direction, len(line), describe(jsonrpc.Classify(body)))
		}
		if s.rec != nil {
			if from == mcplog.FromClient {
				recordContext(s.context, s.rec, body)
			}
			s.rec.Record(from, recorded(line))
		}
	}
	if from == mcplog.FromServer {
		p.onStart = func(first []byte) {
			if jsonrpc.LooksLikeMessage(first) {
				s.answered.Store(true)
				return
			}
			if len(jsonrpc.TrimLine(first)) == 0 {
				return
			}
			if s.noise.Add(1) == 1 {
				s.d.say("the MCP server wrote a line to stdout that is not JSON-RPC: %s; stdout is the MCP wire, so servers should log to stderr. The line was forwarded unchanged and the host may reject it; further such lines are only counted", quote(first, 200))
			}
		}
	}
	p.onRaw = func(limit int) {
		if s.rawSaid[dir].CompareAndSwap(false, true) {
			verb := "neither recorded nor inspected"
			if s.rec == nil {
				verb = "no longer inspected"
			}
			s.d.say("a line %s is longer than --max-frame-bytes (%d); the rest of that stream is forwarded as a raw byte pipe, %s", direction, limit, verb)
		}
	}
	return p
}

// describe names a frame for --trace.
func describe(m jsonrpc.Message) string {
	switch m.Kind {
	case jsonrpc.Request:
		return fmt.Sprintf("request %s id=%s", m.Method, m.ID)
	case jsonrpc.Notification:
		return "notification " + m.Method
	case jsonrpc.Response:
		if m.IsError {
			return fmt.Sprintf("error id=%s", m.ID)
		}
		return fmt.Sprintf("response id=%s", m.ID)
	case jsonrpc.Batch:
		return fmt.Sprintf("batch of %d", m.Len)
	default:
		return m.Kind.String()
	}
}

// quote returns line (without terminator) as a quoted string of at most max
// bytes.
func quote(line []byte, max int) string {
	line = jsonrpc.TrimLine(line)
	cut := ""
	if len(line) > max {
		line, cut = line[:max], "…"
	}
	return fmt.Sprintf("%q%s", line, cut)
}

func (s *session) earlyExit() {
	c := s.child
	if s.opts.InheritStderr {
		s.d.say("the MCP server %s before answering anything; its stderr is above (--inherit-stderr)", c.describeExit())
		return
	}
	lines := s.tail.lines()
	if len(lines) == 0 {
		s.d.say("the MCP server %s before answering anything, and wrote nothing to stderr", c.describeExit())
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the MCP server %s before answering anything; the last %d line(s) of its stderr:", c.describeExit(), len(lines))
	for _, l := range lines {
		b.WriteString("\n    ")
		b.WriteString(l)
	}
	s.d.say("%s", b.String())
}

func (s *session) copyStderr(r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.d.raw(buf[:n])
			s.tail.write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// hostWriter writes to the host until a write fails, then discards and
// calls gone once.
type hostWriter struct {
	mu   sync.Mutex // the pump's lines and the flow's answers
	w    io.Writer
	gone func()
	dead bool
}

func (h *hostWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead {
		return len(p), nil
	}
	if _, err := h.w.Write(p); err != nil {
		h.dead = true
		h.gone()
	}
	return len(p), nil
}

// diag writes the proxy's messages and the server's stderr to the proxy's
// stderr, one writer at a time.
type diag struct {
	mu sync.Mutex
	w  io.Writer
}

func (d *diag) say(format string, args ...any) {
	msg := "hoist-mcp: " + fmt.Sprintf(format, args...) + "\n"
	d.mu.Lock()
	defer d.mu.Unlock()
	io.WriteString(d.w, msg)
}

func (d *diag) raw(p []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.w.Write(p)
}

// tailLines keeps the last stderrTail lines written to it, each cut to 1 KiB.
type tailLines struct {
	mu      sync.Mutex
	ring    []string
	partial []byte
}

func (t *tailLines) write(p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(p) > 0 {
		i := indexNL(p)
		if i < 0 {
			if len(t.partial) < 1024 {
				t.partial = append(t.partial, p[:min(len(p), 1024-len(t.partial))]...)
			}
			return
		}
		if len(t.partial) < 1024 {
			t.partial = append(t.partial, p[:min(i, 1024-len(t.partial))]...)
		}
		t.push(strings.TrimRight(string(t.partial), "\r"))
		t.partial = t.partial[:0]
		p = p[i+1:]
	}
}

func (t *tailLines) push(l string) {
	if len(t.ring) == stderrTail {
		copy(t.ring, t.ring[1:])
		t.ring = t.ring[:stderrTail-1]
	}
	t.ring = append(t.ring, l)
}

func (t *tailLines) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.ring...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
		if len(out) > stderrTail {
			out = out[1:]
		}
	}
	return out
}

func indexNL(p []byte) int {
	for i, b := range p {
		if b == '\n' {
			return i
		}
	}
	return -1
}
