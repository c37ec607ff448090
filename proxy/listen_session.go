package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
	"github.com/hoist-mcp/hoist/telemetry"
)

// streamBuffer is how many messages the GET stream, and waiterBuffer a
// request's event stream, may have waiting to be written to a slow host
// before further ones go elsewhere or are dropped.
const (
	streamBuffer = 1024
	waiterBuffer = 64
)

// lsession is one hoist session of --listen: its own server, log and routing
// of what the server sends to the host's open streams. A session-era host's
// is its MCP session; a stateless-era host's is keyed by its Hoist-Session
// header or its connection (key), since that era has no session.
type lsession struct {
	l    *listener
	id   string // Mcp-Session-Id; for the stateless era a name never sent
	key  string // statelessKey; "" for a session opened with initialize
	name string // <start>-<pid>-<n>, names the log
	rec  *mcplog.Writer
	// context reads the session's --context file.
	context *contextTail
	// active serves --flow, --guards and --commit in this session.
	active *active
	// console is the session's attachment to --console, nil without it.
	console *consoleClient
	// tel traces the session's requests (--otel); nil without.
	tel *telemetry.Session

	child    *child
	up       *upstream
	inMu     sync.Mutex    // serializes writes to the child's stdin
	readDone chan struct{} // the child's stdout is drained

	mu      sync.Mutex
	waiters map[string]*waiter // requests waiting for their response, by raw id
	stream  chan []byte        // the host's GET stream, nil when none is open
	queue   [][]byte           // server messages waiting for a stream
	dropped int
	last    time.Time
	open    int // streams open: the GET stream and waiting requests

	done    chan struct{}
	endOnce sync.Once

	// Guarded by l.mu: registered once newSession has put the session in
	// l.sessions; endEarly says why it ended before that (its server
	// exited as it started), for newSession to end it.
	registered bool
	endEarly   string
}

// waiter is a host request waiting for its response on a POST.
type waiter struct {
	ch  chan outMsg
	sse bool
	// token is the request's progressToken, raw: the server's progress
	// notifications naming it are the request's.
	token string
}

type outMsg struct {
	line  []byte
	final bool // the response itself
}

func (s *lsession) touch() {
	s.mu.Lock()
	s.last = time.Now()
	s.mu.Unlock()
}

func (s *lsession) idleFor() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open > 0 {
		return 0
	}
	return time.Since(s.last)
}

func (s *lsession) record(from string, line []byte) {
	if s.rec != nil {
		s.rec.Record(from, clone(line)) // a buffer the log's writer recycles
	}
}

// startBackend starts the session's server: the command, or its own
// session of --upstream.
func (s *lsession) startBackend() error {
	o := s.l.opts
	if a := s.active; a != nil {
		a.toHost = func(line []byte) { s.deliver(jsonrpc.TrimLine(line)) }
		a.toServer = func(line []byte) { s.toServer(line) }
		a.start()
	}
	if s.console != nil {
		s.console.start()
	}
	if o.Upstream != "" {
		s.up = newUpstream(o.Upstream, o.UpstreamHeader, o.MaxFrameBytes, func(from string, line []byte, forID json.RawMessage) {
			s.record(from, line)
			s.route(line, forID)
		}, s.l.d.say)
		return nil
	}
	c, err := s.l.servers.start(o.Command, nil)
	if err != nil {
		return err
	}
	s.child = c
	s.readDone = make(chan struct{})
	lines := make(chan []byte)
	go func() {
		readLines(c.stdout, o.MaxFrameBytes, lines, s.serverTooLong)
		close(lines)
	}()
	go func() {
		defer close(s.readDone)
		for line := range lines {
			body := jsonrpc.TrimLine(line)
			if len(body) == 0 {
				continue
			}
			s.record(mcplog.FromServer, body)
			s.route(body, nil)
		}
		// The server closed its stdout: it exited, or is about to.
		go s.l.end(s, "the MCP server exited")
	}()
	go io.Copy(&diagWriter{s.l.d}, c.stderr)
	return nil
}

// serverTooLong answers for a server line past --max-frame-bytes, which
// cannot go to the host over HTTP: the request it answers (its id read from
// the line's start) gets a JSON-RPC error, logged as the proxy's, so the
// host is not left waiting (manual, "Hosts over HTTP").
func (s *lsession) serverTooLong(start []byte) {
	max := s.l.opts.MaxFrameBytes
	id, ok := responseID(start)
	if !ok {
		s.l.d.say("session %s: a line from the MCP server is longer than --max-frame-bytes (%d) and cannot be sent over HTTP; dropped", s.id[:8], max)
		return
	}
	s.l.d.say("session %s: the MCP server's answer to request %s is longer than --max-frame-bytes (%d) and cannot be sent over HTTP; the request is answered with an error", s.id[:8], id, max)
	line := mcpmsg.AppendError(nil, id, errTooLong, fmt.Sprintf("hoist-mcp: the MCP server's answer is longer than --max-frame-bytes (%d bytes), so it cannot be passed on", max))
	s.record(mcplog.FromProxy, line)
	s.route(line, nil)
}

// errTooLong is the JSON-RPC error code of a request whose answer the proxy
// could not pass on: the implementation-defined server error range.
const errTooLong = -32000

// diagWriter passes a server's stderr to the proxy's, unchanged.
type diagWriter struct{ d *diag }

func (w *diagWriter) Write(p []byte) (int, error) {
	w.d.raw(p)
	return len(p), nil
}

// fromHost records a host message and forwards it to the server; h is
// the headers of the POST it came in, whose traceparent (and tracestate)
// --otel reads for a request whose _meta has none.
func (s *lsession) fromHost(line []byte, h http.Header) {
	if s.tel != nil {
		var tp, ts string
		if v := h["Traceparent"]; len(v) == 1 {
			tp = v[0]
		}
		if v := h["Tracestate"]; len(v) > 0 {
			ts = strings.Join(v, ",")
		}
		s.tel.FromHostHTTP(line, tp, ts)
	}
	recordContext(s.context, s.rec, line)
	s.record(mcplog.FromClient, line)
	if c := s.console; c != nil {
		c.waitAttach()
		if c.beforeServer(append(bytes.Clone(line), '\n')) {
			return // the console answered it, sent something in its place, or dropped it
		}
	}
	if s.active != nil && s.active.hostLine(line) {
		return // the proxy answered it: a refused write, or hoist_commit
	}
	if s.up == nil {
		// Written at once, so the line and its end go out in one write
		// through a buffer kept for the next line.
		s.inMu.Lock()
		defer s.inMu.Unlock()
		writeWithEnd(s.child.stdin, line)
		return
	}
	buf := make([]byte, len(line)+1)
	copy(buf, line)
	buf[len(line)] = '\n'
	s.toServer(buf)
}

// toServer forwards one whole line (terminator included) to the server.
func (s *lsession) toServer(line []byte) {
	if s.up != nil {
		s.up.send(jsonrpc.TrimLine(line))
		return
	}
	s.inMu.Lock()
	defer s.inMu.Unlock()
	s.child.stdin.Write(line)
}

// cancel tells the server that the host closed the stream of its
// stateless-era request id (raw), which is how that era cancels a request
// over HTTP: a server over stdio gets a notifications/cancelled, which the
// log keeps as the proxy's; an --upstream request's own stream is closed.
func (s *lsession) cancel(id json.RawMessage) {
	line := mcpmsg.AppendCancelled(nil, id, "the host closed the request's stream")
	s.record(mcplog.FromProxy, line)
	if s.up != nil {
		s.up.cancelStream(id)
		return
	}
	s.inMu.Lock()
	defer s.inMu.Unlock()
	s.child.stdin.Write(append(line, '\n'))
}

var errDuplicateID = errors.New("a request with this id is already waiting for its response in this session")

// wait registers a request waiting for its response; token is its
// progressToken (raw), nil when it has none.
func (s *lsession) wait(id []byte, sse bool, token json.RawMessage) (*waiter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := string(id)
	if _, ok := s.waiters[key]; ok {
		return nil, errDuplicateID
	}
	// A host that takes only JSON gets the response alone; an event
	// stream also carries what the server sends meanwhile.
	size := 1
	if sse {
		size = waiterBuffer
	}
	w := &waiter{ch: make(chan outMsg, size), sse: sse, token: string(token)}
	s.waiters[key] = w
	s.open++
	return w, nil
}

func (s *lsession) unwait(id []byte, w *waiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiters[string(id)] == w {
		delete(s.waiters, string(id))
	}
	s.open--
	s.last = time.Now()
}

// openStream opens the host's GET stream, handing it what was queued.
func (s *lsession) openStream() (chan []byte, [][]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stream != nil {
		return nil, nil, false
	}
	s.stream = make(chan []byte, streamBuffer)
	backlog := s.queue
	s.queue = nil
	s.open++
	return s.stream, backlog, true
}

func (s *lsession) closeStream(ch chan []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stream == ch {
		s.stream = nil
	}
	s.open--
	s.last = time.Now()
}

// route passes a server message to the host (manual, "Streams"): a
// response to the request waiting for it; a message of a waiting request's
// to that request's event stream (forID names the request whose stream
// carried it from an --upstream server; a progress notification names its
// request's token, a subscription's notification the subscriptions/listen
// request); anything else to the GET stream when one is open, else to a
// waiting request's event stream, else to the queue.
func (s *lsession) route(line []byte, forID json.RawMessage) {
	s.tel.FromServer(line, false) // the proxy's lookups end here; the host's in deliverFor
	if c := s.console; c != nil {
		out, taken := c.beforeHost(append(bytes.Clone(line), '\n'))
		if taken {
			return
		}
		if out != nil {
			line = jsonrpc.TrimLine(out) // the console's frame in the server's place
		}
	}
	// A flow takes the answers to its own lookups, and holds the agent's
	// while it runs.
	if s.active != nil && s.active.fromServer(append(bytes.Clone(line), '\n')) {
		return
	}
	s.deliverFor(line, forID)
}

// deliver passes a server message on to the host's streams.
func (s *lsession) deliver(line []byte) { s.deliverFor(line, nil) }

// deliverFor passes a server message on to the host's streams; forID is
// the request whose stream it came on, nil when unknown.
func (s *lsession) deliverFor(line []byte, forID json.RawMessage) {
	s.tel.ToHost(line)
	m := jsonrpc.Classify(line)
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.Kind == jsonrpc.Response && m.HasID() {
		if w, ok := s.waiters[string(m.ID)]; ok {
			delete(s.waiters, string(m.ID))
			w.ch <- outMsg{line: line, final: true} // room is kept for it
		}
		return // an answer nobody waits for any more
	}
	if w := s.related(m, forID); w != nil && len(w.ch) < cap(w.ch)-1 {
		w.ch <- outMsg{line: line}
		return
	}
	if s.stream != nil {
		select {
		case s.stream <- line:
		default:
			s.dropped++
		}
		return
	}
	for _, w := range s.waiters {
		// Keep one place free for the response itself.
		if w.sse && len(w.ch) < cap(w.ch)-1 {
			w.ch <- outMsg{line: line}
			return
		}
	}
	if len(s.queue) >= MaxQueuedMessages {
		s.dropped++
		return
	}
	s.queue = append(s.queue, line)
}

// related returns the waiting request with an event stream a server
// message belongs to, or nil: the request whose stream carried it, else the
// one whose progressToken a progress notification names, else the
// subscriptions/listen request a notification's _meta names.
func (s *lsession) related(m jsonrpc.Message, forID json.RawMessage) *waiter {
	pick := func(w *waiter, ok bool) *waiter {
		if ok && w.sse {
			return w
		}
		return nil
	}
	if forID != nil {
		w, ok := s.waiters[string(forID)]
		return pick(w, ok)
	}
	if m.Kind != jsonrpc.Notification {
		return nil
	}
	if m.Method == mcpmsg.MethodProgress {
		if tok, ok := jsontext.Lookup(m.Params, "progressToken"); ok {
			for _, w := range s.waiters {
				if w.token == string(tok) {
					return pick(w, true)
				}
			}
		}
		return nil
	}
	if meta, ok := jsontext.Lookup(m.Params, "_meta"); ok {
		if sub, ok := jsontext.Lookup(meta, mcpmsg.MetaSubscriptionID); ok {
			w, ok := s.waiters[string(sub)]
			return pick(w, ok)
		}
	}
	return nil
}

// shutdown ends the session once; see listener.end.
func (s *lsession) shutdown(why string) {
	s.endOnce.Do(func() {
		s.closeConsole() // a frame held now has no session left to wait for
		defer s.endFlow()
		if s.up != nil {
			close(s.done)
			s.up.close()
		} else {
			c := s.child
			// Closed without waiting for inMu: a write the server does not
			// read holds it, and closing is what ends that write (issue
			// 23, point 7).
			c.stdin.Close()
			c.stop(s.l.opts.StopGrace, s.l.d.say)
			drain := time.NewTimer(drainGrace)
			select {
			case <-s.readDone:
			case <-drain.C:
				c.stdout.SetReadDeadline(time.Now())
				<-s.readDone
			case <-s.l.hurry:
				c.stdout.SetReadDeadline(time.Now())
				<-s.readDone
			}
			drain.Stop()
			c.stdout.Close()
			close(s.done)
		}
		if s.rec != nil {
			if err := s.rec.Close(); err != nil {
				s.l.d.say("%v", err)
			}
		}
		s.mu.Lock()
		dropped := s.dropped
		s.mu.Unlock()
		if dropped > 0 {
			s.l.d.say("session %s: %d message(s) of the MCP server were dropped: no stream of the host could take them", s.id[:8], dropped)
		}
		s.tel.Close()
		s.l.d.say("session %s ended: %s", s.id[:8], why)
	})
}

// closeConsole stops attaching and continues whatever is held.
func (s *lsession) closeConsole() {
	if s.console != nil {
		s.console.close()
	}
}

// endFlow lets a run in progress hand back and closes the flow log, once the
// server's side has ended.
func (s *lsession) endFlow() {
	a := s.active
	if a == nil {
		return
	}
	a.serverDone()
	if err := a.close(); err != nil {
		s.l.d.say("%v", err)
	}
}
