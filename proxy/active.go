package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// FlowOptions serve a flow after the agent's calls (hoist-mcp --flow and the
// flags under it; manual, "Active mode").
type FlowOptions struct {
	Flow *flow.Flow
	Rule flow.Rule
	Caps flow.Caps
	// Tools, when not nil, are the only tools the flow may call.
	Tools []string
	// Log is the flow log's path ({session} stands for the session); ""
	// means <session>.flow.jsonl beside the session log, or none.
	Log string
	// Shadow decides and logs, but looks nothing up.
	Shadow bool
	// Seed seeds the exploration draws.
	Seed uint64
	// TaskID picks the flow's fold; by default the session.
	TaskID string
	// LookupTimeout bounds the wait for the answer to one lookup; the run
	// hands back to the agent when it passes.
	LookupTimeout time.Duration
}

// active serves a flow in one stdio session: it learns the agent's calls
// from the host's lines, holds the server's answer to a call while the flow
// runs at its site, makes the lookups the flow takes as requests of its own
// (ids hoist-<n>), and hands the answer back with their results appended.
// One run at a time: an answer that arrives meanwhile is forwarded as it is.
type active struct {
	opts    FlowOptions
	server  string // --server-name, else --domain; else initialize's name
	rec     *mcplog.Writer
	flowLog *mcplog.Writer
	say     func(string, ...any)
	session string

	toServer func(line []byte) // one whole line, terminator included
	toHost   func(line []byte)

	mu      sync.Mutex
	fs      *flow.Session // nil until the server answered initialize
	off     bool          // the flow serves nothing in this session
	calls   map[string]int
	lists   map[string]bool
	inits   map[string]bool
	running bool
	waitID  string
	answer  chan []byte
	n       int
	runs    sync.WaitGroup
	gone    chan struct{} // closed when the server's output has ended
}

func newActive(o FlowOptions, server string, say func(string, ...any)) *active {
	if o.LookupTimeout <= 0 {
		o.LookupTimeout = 30 * time.Second
	}
	return &active{
		opts:   o,
		server: server,
		say:    say,
		calls:  map[string]int{},
		lists:  map[string]bool{},
		inits:  map[string]bool{},
		answer: make(chan []byte, 1),
		gone:   make(chan struct{}),
	}
}

// ready starts the flow session at once when the proxy was told the
// server's name (--server-name or --domain); else the name in the server's
// answer to initialize starts it.
func (a *active) ready() {
	if a.server != "" {
		a.mu.Lock()
		a.start("")
		a.mu.Unlock()
	}
}

// start makes the flow session once the server's name is known.
func (a *active) start(serverName string) {
	name := a.server
	if name == "" {
		name = serverName
	}
	o := flow.Options{
		Rule:   a.opts.Rule,
		Caps:   a.opts.Caps,
		Server: name,
		Tools:  a.opts.Tools,
		TaskID: a.opts.TaskID,
		Shadow: a.opts.Shadow,
	}
	if o.TaskID == "" {
		o.TaskID = a.session
	}
	if o.Rule.Epsilon > 0 {
		o.Rand = rand.New(rand.NewPCG(a.opts.Seed, 0x686f697374))
	}
	fs, err := flow.NewSession(a.opts.Flow, o)
	if err != nil {
		a.off = true
		a.say("flow: %v", err)
		return
	}
	a.fs = fs
}

// fromHost learns what the host asks: initialize, tools/list and the
// agent's tools/call (line without terminator).
func (a *active) fromHost(line []byte) {
	m := jsonrpc.Classify(line)
	if m.Kind != jsonrpc.Request {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch m.Method {
	case "initialize":
		a.inits[string(m.ID)] = true
	case "tools/list":
		a.lists[string(m.ID)] = true
	case "tools/call":
		if a.fs == nil {
			return
		}
		c := mcpmsg.ReadCall(m.Params)
		a.calls[string(m.ID)] = a.fs.Call(c.Name, c.Args)
	}
}

// fromServer looks at a whole server line (terminator included) before it
// is forwarded, and reports whether it took the line over: the answer to a
// lookup of its own, or the agent's result held while the flow runs.
func (a *active) fromServer(line []byte) bool {
	body := jsonrpc.TrimLine(line)
	m := jsonrpc.Classify(body)
	if m.Kind != jsonrpc.Response || !m.HasID() {
		return false
	}
	id := string(m.ID)
	if mcpmsg.IsProxyID(m.ID) {
		a.mu.Lock()
		wanted := id == a.waitID
		a.waitID = ""
		a.mu.Unlock()
		if wanted {
			a.answer <- body
		}
		return true // the proxy's own: never the host's
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.inits[id]:
		delete(a.inits, id)
		if a.fs == nil && !a.off {
			a.start(mcpmsg.ReadInitialized(m.Result).ServerName)
		}
	case a.lists[id]:
		delete(a.lists, id)
		if a.fs != nil {
			a.fs.Listed(listedTools(m.Result))
		}
	default:
		idx, ok := a.calls[id]
		if !ok {
			return false
		}
		delete(a.calls, id)
		res := mcpmsg.ResultOf(m)
		text, failed := res.Text(), res.IsError
		if a.running {
			a.fs.Result(idx, text, failed)
			return false
		}
		// The first decision is made here, on the pump's goroutine: when
		// it looks nothing up, which is most calls, the answer goes on at
		// once, with no hand-off to another goroutine.
		a.fs.Result(idx, text, failed)
		r := a.fs.Run(idx)
		d := r.Next()
		a.logJSON(d)
		if a.opts.Shadow {
			// Shadow makes no lookup, so its whole run is decided here.
			for d.Taken >= 0 {
				d = r.Next()
				a.logJSON(d)
			}
		}
		if d.Taken < 0 {
			rec := r.End()
			a.logJSON(rec)
			return false
		}
		a.running = true
		a.runs.Add(1)
		go a.run(r, d, line)
		return true
	}
	return false
}

// run goes on with a run whose first decision d took a lookup, and hands
// the held answer back.
func (a *active) run(r *flow.Run, d flow.Decision, held []byte) {
	defer a.runs.Done()
	a.mu.Lock()
	fs := a.fs
	a.mu.Unlock()
	var found []mcpmsg.Lookup
	for first := true; ; first = false {
		if !first {
			d = r.Next()
			a.logJSON(d)
		}
		if d.Taken < 0 {
			break
		}
		o := d.Offers[d.Taken]
		res, ok := a.lookup(fs.CallName(o.Tool), o.Args)
		if !ok {
			break
		}
		ans := mcpmsg.ResultOf(jsonrpc.Classify(res))
		r.Answer(ans.Text(), ans.IsError)
		found = append(found, mcpmsg.Lookup{Tool: fs.CallName(o.Tool), Args: o.Args, Text: ans.Text()})
	}
	rec := r.End()
	a.logJSON(rec)
	out := held
	if len(found) > 0 {
		if with, ok := mcpmsg.AppendText(jsonrpc.TrimLine(held), mcpmsg.FormatLookups(found)); ok {
			if a.rec != nil {
				a.rec.Record(mcplog.FromProxy, with)
			}
			out = append(bytes.Clone(with), '\n')
		}
	}
	// The run is over before the agent can have its answer, so that the
	// answer to the agent's next call always gets a run of its own.
	a.mu.Lock()
	a.running = false
	a.mu.Unlock()
	a.toHost(out)
}

// lookup makes one request of the proxy's own and waits for its answer.
func (a *active) lookup(tool string, args json.RawMessage) ([]byte, bool) {
	a.mu.Lock()
	a.n++
	rawID := mcpmsg.ProxyID(uint64(a.n))
	id := strings.Trim(string(rawID), `"`)
	a.waitID = string(rawID)
	a.mu.Unlock()
	req := mcpmsg.AppendToolCall(nil, rawID, tool, args)
	if a.rec != nil {
		a.rec.Record(mcplog.FromProxy, bytes.Clone(req))
	}
	a.toServer(append(req, '\n'))
	t := time.NewTimer(a.opts.LookupTimeout)
	defer t.Stop()
	select {
	case res := <-a.answer:
		return res, true
	case <-a.gone:
		return nil, false
	case <-t.C:
		a.mu.Lock()
		a.waitID = ""
		a.mu.Unlock()
		a.say("flow: the MCP server did not answer %s within %v; handing back to the agent", id, a.opts.LookupTimeout)
		return nil, false
	}
}

func (a *active) logJSON(v any) {
	if a.flowLog == nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		a.say("flow log: %v", err)
		return
	}
	a.flowLog.Append(b)
}

// wait waits for the run in progress, at the end of the session.
func (a *active) wait() { a.runs.Wait() }

// listedTools reads a tools/list result.
func listedTools(result []byte) []episode.Tool {
	listed, _ := mcpmsg.ReadTools(result)
	out := make([]episode.Tool, 0, len(listed))
	for _, t := range listed {
		out = append(out, episode.Tool{Name: t.Name, Kind: episode.KindOf(t.Annotations), InputSchema: t.InputSchema, Annotations: t.Annotations})
	}
	return out
}

// lineGate serializes whole lines to the server: the host's lines, which
// the pump writes in pieces, and the proxy's own requests, which must never
// land inside one of them.
type lineGate struct {
	mu   sync.Mutex
	w    io.Writer
	held bool // the pump is inside a line
}

// Write is the pump's: the gate stays shut from a line's first piece to its
// last.
func (g *lineGate) Write(p []byte) (int, error) {
	if !g.held {
		g.mu.Lock()
		g.held = true
	}
	n, err := g.w.Write(p)
	if len(p) > 0 && p[len(p)-1] == '\n' || err != nil {
		g.held = false
		g.mu.Unlock()
	}
	return n, err
}

// release opens the gate after the pump stopped inside a line.
func (g *lineGate) release() {
	if g.held {
		g.held = false
		g.mu.Unlock()
	}
}

// writeLine writes one whole line of the proxy's own.
func (g *lineGate) writeLine(line []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, err := g.w.Write(line)
	return err
}
