package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hoist-mcp/hoist/console/hold"
	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// ConsoleOptions attach the proxy to a running hoist console, where a
// person may hold a frame and continue, inject, retry or abort it
// (hoist-mcp --console; docs/console.md, "Holding a frame").
type ConsoleOptions struct {
	// Addr is the console's host:port.
	Addr string
	// Token, when set, is sent as a bearer token (the console's
	// --token-file).
	Token string
	// Retry is the wait between attempts to attach; 0 means
	// DefaultConsoleRetry.
	Retry time.Duration
	// WaitForAttach holds the host's first line until a console has
	// attached and sent its breakpoints (--wait-for-attach), so that even
	// initialize can be held.
	WaitForAttach bool
}

// DefaultConsoleRetry is how long the proxy waits before it tries again to
// attach to a console that is not there, or that went away.
const DefaultConsoleRetry = time.Second

// consoleBreakpoints are the console's breakpoints as the proxy matches
// them. A value is never changed once published: a new one replaces it.
type consoleBreakpoints struct {
	methods, tools map[string]bool
	errors, loop   bool
	allow          []string
}

// consoleMsg is one line of the attach protocol, either way (the console's
// attachMsg, console/attach.go).
type consoleMsg struct {
	Type    string          `json:"type"`
	Session string          `json:"session,omitempty"`
	Server  string          `json:"server,omitempty"`
	Modern  bool            `json:"modern,omitempty"`
	N       int             `json:"n,omitempty"`
	Point   string          `json:"point,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Frame   json.RawMessage `json:"frame,omitempty"`
	Why     string          `json:"why,omitempty"`
	Action  hold.Action     `json:"action,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
	Digest  string          `json:"digest,omitempty"`
	// breakpoints
	Methods []string `json:"methods,omitempty"`
	Tools   []string `json:"tools,omitempty"`
	Errors  bool     `json:"errors,omitempty"`
	Loop    bool     `json:"loop,omitempty"`
	Allow   []string `json:"allow,omitempty"`
}

// watched is a request of the host's whose response the proxy may hold:
// its method, its line (to send again on retry) and whether a breakpoint
// matched it (else only the error breakpoint may hold its answer).
type watched struct {
	method string
	line   []byte
	bp     bool
}

// consoleClient is one session's attachment to a console. One goroutine,
// attachLoop, keeps attaching; the pumps ask it to hold a frame only while
// it is attached, and each held frame waits on its own channel, which
// detaching closes (fail-open: the frame is continued unchanged).
type consoleClient struct {
	opts    ConsoleOptions
	say     func(string, ...any)
	session string
	server  string
	rec     *mcplog.Writer
	tr      *http.Transport
	toHost  func(line []byte) // one whole line, terminator included
	toSrv   func(line []byte) // one whole line, terminator included

	// observe, when set, is told of each hold and its decision (--otel).
	observe func(id []byte, point, method, why, action string)

	modern atomic.Bool
	// bp are the attached console's breakpoints; off while detached, when
	// the pumps look at nothing.
	bp  atomic.Pointer[consoleBreakpoints]
	off *consoleBreakpoints

	// loop is the loop hold, owned by the host's pump; loopOf is the
	// breakpoints it was made for (a new allow list starts a new one).
	loop   *hold.Loop
	loopOf *consoleBreakpoints

	mu      sync.Mutex
	w       io.Writer // the attach request's body; nil while detached
	next    int
	held    map[int]chan consoleMsg
	watched map[string]watched // the host's requests, by raw id
	// asked are the server's requests to the host (sampling, elicitation)
	// a breakpoint held or the error breakpoint watches, by raw id: the
	// host's answer to one may be held in turn.
	asked map[string]watched

	// ready is closed once a console has attached and sent its
	// breakpoints; waited makes the host's first line wait for it once
	// (--wait-for-attach).
	ready     chan struct{}
	readyOnce sync.Once
	waited    sync.Once

	wmu  sync.Mutex // one line at a time to the console
	quit chan struct{}
	done chan struct{}
	stop context.CancelFunc
}

func newConsoleClient(o ConsoleOptions, session, server string, rec *mcplog.Writer, say func(string, ...any)) *consoleClient {
	if o.Retry <= 0 {
		o.Retry = DefaultConsoleRetry
	}
	c := &consoleClient{opts: o, say: say, session: session, server: server, rec: rec,
		held: map[int]chan consoleMsg{}, watched: map[string]watched{}, asked: map[string]watched{}, ready: make(chan struct{}),
		quit: make(chan struct{}), done: make(chan struct{}),
		off: &consoleBreakpoints{},
		// A transport of its own, without the environment's HTTP proxy,
		// which would not carry a full-duplex request.
		tr: &http.Transport{DisableCompression: true}}
	c.bp.Store(c.off)
	return c
}

// start starts attaching. toHost and toSrv must be set.
func (c *consoleClient) start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	go c.attachLoop(ctx)
}

// waitAttach makes the host's first line wait, with --wait-for-attach,
// until a console has attached and sent its breakpoints, or the session
// ends; later lines never wait here.
func (c *consoleClient) waitAttach() {
	if !c.opts.WaitForAttach {
		return
	}
	c.waited.Do(func() {
		select {
		case <-c.ready:
			return
		default:
		}
		c.say("console: waiting for a console to attach at %s before forwarding the host's first line (--wait-for-attach)", c.opts.Addr)
		select {
		case <-c.ready:
		case <-c.quit:
		}
	})
}

// close stops attaching and continues every held frame.
func (c *consoleClient) close() {
	if c.stop == nil {
		return // never started
	}
	select {
	case <-c.quit:
		return
	default:
	}
	close(c.quit)
	c.stop()
	<-c.done
	c.tr.CloseIdleConnections()
}

// attachLoop attaches, and attaches again each Retry after the console
// went or was not there, until close. It says once that the console cannot
// be reached, not at every attempt.
func (c *consoleClient) attachLoop(ctx context.Context) {
	defer close(c.done)
	failed := ""
	for {
		err := c.attachOnce(ctx)
		c.detach()
		select {
		case <-c.quit:
			return
		default:
		}
		if err != nil && err.Error() != failed {
			c.say("console: not attached to %s (%v); trying again every %v, and holding nothing meanwhile", c.opts.Addr, err, c.opts.Retry)
			failed = err.Error()
		} else if err == nil {
			c.say("console: detached from %s; held frames continued unchanged", c.opts.Addr)
			failed = ""
		}
		t := time.NewTimer(c.opts.Retry)
		select {
		case <-t.C:
		case <-c.quit:
			t.Stop()
			return
		}
	}
}

// attachOnce holds one attach request open until it ends: nil when it
// ended after attaching, else why it could not attach.
func (c *consoleClient) attachOnce(ctx context.Context) error {
	pr, pw := io.Pipe()
	defer pw.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.opts.Addr+"/hold/attach", pr)
	if err != nil {
		return fmt.Errorf("making the attach request: %w", err)
	}
	req.Header.Set("Content-Type", "application/jsonl")
	if c.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	}
	resp, err := c.tr.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("dialing: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the console answered %s", resp.Status)
	}
	c.mu.Lock()
	c.w = pw
	c.mu.Unlock()
	c.say("console: attached to %s", c.opts.Addr)
	c.send(consoleMsg{Type: "hello", Session: c.session, Server: c.server, Modern: c.modern.Load()})
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m consoleMsg
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue // a line this proxy does not read is left alone
		}
		switch m.Type {
		case "breakpoints":
			c.bp.Store(breakpointsOf(m))
			c.say("console: holding methods %v, tools %v; loop hold %v (allowing %v); errors %v", m.Methods, m.Tools, m.Loop, m.Allow, m.Errors)
			c.readyOnce.Do(func() { close(c.ready) })
		case "verdict":
			c.mu.Lock()
			ch := c.held[m.N]
			delete(c.held, m.N)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
	return nil
}

func breakpointsOf(m consoleMsg) *consoleBreakpoints {
	bp := &consoleBreakpoints{methods: map[string]bool{}, tools: map[string]bool{}, errors: m.Errors, loop: m.Loop, allow: m.Allow}
	for _, s := range m.Methods {
		bp.methods[s] = true
	}
	for _, s := range m.Tools {
		bp.tools[s] = true
	}
	return bp
}

// detach forgets the attachment and continues every held frame.
func (c *consoleClient) detach() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.w = nil
	for n, ch := range c.held {
		close(ch)
		delete(c.held, n)
	}
	clear(c.watched)
	clear(c.asked)
	c.bp.Store(c.off)
}

// attached reports whether a console is attached.
func (c *consoleClient) attached() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w != nil
}

// send writes one line to the console, and reports whether it was
// written; the attachment's reader sees a broken one end.
func (c *consoleClient) send(m consoleMsg) bool {
	b, err := json.Marshal(m)
	if err != nil {
		return false
	}
	c.mu.Lock()
	w := c.w
	c.mu.Unlock()
	if w == nil {
		return false
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = w.Write(append(b, '\n'))
	return err == nil
}

// hold shows the console frame m (line, without terminator), held at p
// because of why, and waits for the person's verdict; method is the
// request's. Detached, or detaching meanwhile, it continues the frame.
func (c *consoleClient) hold(p hold.Point, m jsonrpc.Message, line []byte, method, why string) hold.Verdict {
	c.mu.Lock()
	if c.w == nil {
		c.mu.Unlock()
		return hold.Verdict{Forward: true}
	}
	c.mu.Unlock()
	point := "before"
	if p == hold.After {
		point = "after"
	}
	digest := hold.Digest(p, line)
	if c.observe != nil {
		c.observe(m.ID, point, method, why, "")
	}
	var v consoleMsg
	for {
		c.mu.Lock()
		c.next++
		n := c.next
		ch := make(chan consoleMsg, 1)
		c.held[n] = ch
		c.mu.Unlock()
		c.say("console: holding %s %s id=%s (%s)", point, method, m.ID, why)
		if !c.send(consoleMsg{Type: "held", N: n, Point: point, ID: json.RawMessage(m.ID), Method: method, Frame: json.RawMessage(line), Why: why, Digest: digest}) {
			// The console never saw it, so no verdict will come.
			c.mu.Lock()
			delete(c.held, n)
			c.mu.Unlock()
			c.say("console: continued %s id=%s unchanged: it could not be shown", method, m.ID)
			return hold.Verdict{Forward: true}
		}
		var ok bool
		select {
		case v, ok = <-ch:
		case <-c.quit:
		}
		if !ok {
			c.say("console: continued %s id=%s unchanged: no console attached", method, m.ID)
			return hold.Verdict{Forward: true}
		}
		if v.Digest == digest {
			break
		}
		// A verdict is an approval of one frame: one that names another
		// (or none) releases nothing, and the frame is shown again.
		c.say("console: a verdict for frame %d names digest %q, not the held frame's %s: it does not release %s id=%s, which is held again", n, v.Digest, digest, method, m.ID)
	}
	verdict, err := hold.Decide(p, v.Action, m.ID, method, v.Value, c.modern.Load())
	if err != nil {
		c.say("console: %v; the frame is continued unchanged", err)
		return hold.Verdict{Forward: true}
	}
	c.say("console: %s %s id=%s", v.Action, method, m.ID)
	if c.observe != nil {
		c.observe(m.ID, point, method, why, string(v.Action))
	}
	return verdict
}

// hostIntercept wraps the host pump's intercept, next (nil for none): a
// line the console holds is decided first, and only a line it lets go on
// unchanged reaches next.
func (c *consoleClient) hostIntercept(next func([]byte) bool) func([]byte) bool {
	return func(line []byte) bool {
		c.waitAttach()
		if c.beforeServer(line) {
			return true
		}
		return next != nil && next(line)
	}
}

// serverIntercept wraps the server pump's intercept, next (nil for none):
// a response the console holds is decided first; one it rewrites goes on
// to next in its new shape, and is written to the host when next lets it
// pass.
func (c *consoleClient) serverIntercept(next func([]byte) bool) func([]byte) bool {
	return func(line []byte) bool {
		out, taken := c.beforeHost(line)
		switch {
		case taken:
			return true
		case next != nil && next(out):
			return true
		case out != nil:
			c.toHost(out) // the console's frame in the server's place
			return true
		}
		return false
	}
}

// beforeServer decides on a host line (terminator included) before it is
// forwarded, and reports whether the proxy answered it or dropped it
// instead. Only while a console is attached is anything held.
func (c *consoleClient) beforeServer(line []byte) (taken bool) {
	bp := c.bp.Load()
	if bp == c.off {
		return false
	}
	body := jsonrpc.TrimLine(line)
	// The line as the server will read it (names under case folding), so
	// that a breakpoint on a tool holds every spelling of its call.
	view := mcpmsg.ReadView(body)
	m := view.Message
	if m.Kind == jsonrpc.Response && m.HasID() {
		return c.hostAnswer(bp, m, body)
	}
	if m.Kind != jsonrpc.Request && m.Kind != jsonrpc.Notification {
		return false
	}
	if m.Kind == jsonrpc.Request && mcpmsg.IsModern(view.Meta.ProtocolVersion) {
		c.modern.Store(true)
	}
	why := ""
	if bp.methods[m.Method] {
		why = "breakpoint"
	}
	if m.Method == mcpmsg.MethodToolsCall {
		if bp.tools[view.Call.Name] {
			why = "breakpoint"
		}
		if bp.loop && m.Kind == jsonrpc.Request && c.loopHolds(bp, m.Params) && why == "" {
			why = "loop"
		}
	}
	if m.Kind == jsonrpc.Request && (why == "breakpoint" || bp.errors) && c.attached() {
		c.mu.Lock()
		c.watched[string(m.ID)] = watched{method: m.Method, line: append(bytes.Clone(body), '\n'), bp: why == "breakpoint"}
		c.mu.Unlock()
	}
	if why == "" {
		return false
	}
	v := c.hold(hold.Before, m, body, m.Method, why)
	switch {
	case v.Answer:
		c.unwatch(m.ID)
		c.record(v.Line)
		c.toHost(append(v.Line, '\n'))
		return true
	case v.Drop:
		return true
	case v.Forward && v.Line != nil:
		c.record(v.Line)
		c.toSrv(append(v.Line, '\n'))
		return true
	}
	return false
}

// loopHolds tells the loop hold of a tools/call and reports whether it
// holds it. A new allow list starts a new run.
func (c *consoleClient) loopHolds(bp *consoleBreakpoints, params []byte) bool {
	if c.loopOf != bp {
		c.loop, c.loopOf = hold.NewLoop(bp.allow...), bp
	}
	return c.loop.Call(params)
}

func (c *consoleClient) unwatch(id []byte) {
	c.mu.Lock()
	delete(c.watched, string(id))
	c.mu.Unlock()
}

// beforeHost decides on a server line (terminator included) before it is
// forwarded: out is the console's line to go on in its place (nil for the
// line itself), and taken says nothing goes on.
func (c *consoleClient) beforeHost(line []byte) (out []byte, taken bool) {
	if c.bp.Load() == c.off {
		return nil, false
	}
	body := jsonrpc.TrimLine(line)
	m := jsonrpc.Classify(body)
	if m.Kind == jsonrpc.Request || m.Kind == jsonrpc.Notification {
		return c.serverAsks(c.bp.Load(), m, body)
	}
	if m.Kind != jsonrpc.Response || !m.HasID() {
		return nil, false
	}
	return c.holdAnswer(c.bp.Load(), m, body, c.watched, c.toSrv)
}

// holdAnswer holds the answer m (body) to a watched request when its
// watch says so: after a breakpoint held the request, or, with the error
// breakpoint, when it is an error. in is the watch list it is on
// (c.watched for the host's requests, c.asked for the server's), and
// resend sends the request again to whoever answers it. out is the
// console's frame in the answer's place (nil for the answer itself), and
// taken says nothing goes on.
func (c *consoleClient) holdAnswer(bp *consoleBreakpoints, m jsonrpc.Message, body []byte, in map[string]watched, resend func([]byte)) (out []byte, taken bool) {
	c.mu.Lock()
	w, ok := in[string(m.ID)]
	delete(in, string(m.ID))
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	why := "breakpoint"
	if !w.bp {
		if !bp.errors || !(m.IsError || mcpmsg.ResultOf(m).IsError) {
			return nil, false
		}
		why = "error"
	}
	v := c.hold(hold.After, m, body, w.method, why)
	switch {
	case v.Resend:
		c.mu.Lock()
		in[string(m.ID)] = w
		c.mu.Unlock()
		c.record(jsonrpc.TrimLine(w.line))
		resend(w.line)
		return nil, true
	case v.Drop:
		return nil, true
	case v.Forward && v.Line != nil:
		c.record(v.Line)
		return append(v.Line, '\n'), false
	}
	return nil, false
}

// serverAsks decides on a request or notification of the server's to the
// host (sampling/createMessage, elicitation/create, a notification) before
// it is forwarded: held at a method breakpoint, before the host. An answer
// (inject, abort) goes back to the server, which asked; out is the frame
// to go on in its place (nil for the line itself), and taken says nothing
// goes on to the host (issue 23, point 8).
func (c *consoleClient) serverAsks(bp *consoleBreakpoints, m jsonrpc.Message, body []byte) (out []byte, taken bool) {
	held := bp.methods[m.Method]
	if m.Kind == jsonrpc.Request && (held || bp.errors) && c.attached() {
		c.mu.Lock()
		c.asked[string(m.ID)] = watched{method: m.Method, line: append(bytes.Clone(body), '\n'), bp: held}
		c.mu.Unlock()
	}
	if !held {
		return nil, false
	}
	v := c.hold(hold.Before, m, body, m.Method, "breakpoint")
	switch {
	case v.Answer:
		c.mu.Lock()
		delete(c.asked, string(m.ID))
		c.mu.Unlock()
		c.record(v.Line)
		c.toSrv(append(v.Line, '\n'))
		return nil, true
	case v.Drop:
		return nil, true
	case v.Forward && v.Line != nil:
		c.record(v.Line)
		return append(v.Line, '\n'), false
	}
	return nil, false
}

// hostAnswer decides on the host's answer to a request of the server's
// before it is forwarded, and reports whether the proxy sent something
// else in its place or nothing: held after a breakpoint held the request,
// or, with the error breakpoint, when it is an error. Retry asks the host
// again.
func (c *consoleClient) hostAnswer(bp *consoleBreakpoints, m jsonrpc.Message, body []byte) (taken bool) {
	out, taken := c.holdAnswer(bp, m, body, c.asked, c.toHost)
	if out != nil {
		c.toSrv(out) // the console's frame in the host's place
		return true
	}
	return taken
}

// record logs a line the proxy sent in a frame's place as a proxy entry.
func (c *consoleClient) record(line []byte) {
	if c.rec != nil {
		c.rec.Record(mcplog.FromProxy, bytes.Clone(line))
	}
}
