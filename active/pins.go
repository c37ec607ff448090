package active

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcpmsg"
	"github.com/hoist-mcp/hoist/toolpin"
)

// Pinned tools (--pin-tools; docs/tools.md, "Pinned in the proxy:
// hoist-mcp --pin-tools"): each tools/list answer is compared with the pin
// file's definitions (toolpin.Compare, as hoist tools compares sessions).
// For a tool listed with another definition than the pinned one, or
// listed and not pinned, the proxy warns, hides the tool, or holds the
// session, as PinsConfig says. notifications/tools/list_changed is passed
// on; when the proxy acts on changes it then lists the tools itself, at
// once, so that a host that does not list them again still meets the
// change, and the calls made meanwhile wait for that listing.

// MethodToolsListChanged is the server's notification that its tools
// changed.
const MethodToolsListChanged = "notifications/tools/list_changed"

// PinAction is what the proxy does about a tool whose definition is not
// the pinned one.
type PinAction string

// The actions.
const (
	// PinWarn says so on stderr; the listing and the calls pass.
	PinWarn PinAction = "warn"
	// PinHide removes the tool from the tools/list answer the host sees
	// (the proxy answers it), and refuses every call of it, until a later
	// listing shows the pinned definition again.
	PinHide PinAction = "hide"
	// PinHold refuses every further tools/call of the session, of any
	// tool: the host has seen the changed definition, and only a person
	// can say it may go on (a new session, the pin file renewed).
	PinHold PinAction = "hold"
)

// ParsePinAction reads a --pin-tools-action value.
func ParsePinAction(s string) (PinAction, error) {
	switch a := PinAction(s); a {
	case PinWarn, PinHide, PinHold:
		return a, nil
	}
	return "", fmt.Errorf("%q: want warn, hide or hold", s)
}

// PinsConfig is --pin-tools.
type PinsConfig struct {
	// File is the pin file's path, for messages.
	File string
	// Tools are the pinned definitions.
	Tools []toolpin.Tool
	// Changed is what is done about a pinned tool listed with another
	// definition (--pin-tools-action); Added about a tool listed and not
	// pinned (--pin-tools-new). "" is PinWarn.
	Changed, Added PinAction
}

// Acts reports whether the proxy does more than warn: it may hide a tool
// from a tools/list answer, or refuse calls.
func (c *PinsConfig) Acts() bool {
	return c != nil && (c.Changed != "" && c.Changed != PinWarn || c.Added != "" && c.Added != PinWarn)
}

// pinState is --pin-tools in one session, owned by the Machine.
type pinState struct {
	cfg PinsConfig
	// hidden are the tools hidden from the host, with the change that hid
	// each.
	hidden map[string]toolpin.Change
	// held is the change that holds the session; nil when none.
	held *toolpin.Change
	// paged is true once a listing came in pages: a page lacks tools that
	// are not removed.
	paged bool
	// lists are the proxy's own tools/list requests in flight, by raw id;
	// parked are the calls (*Held), batches (*HeldBatch) and judged writes
	// (*released) held while one is, in the order they came, to be decided
	// on its answer.
	lists  map[string]bool
	parked []Event
	// lookup is the flow's lookup decided while a listing was in flight
	// (pinLookup), sent or not on its answer; nil when none.
	lookup *ToServer
	n      uint64
}

func newPins(c PinsConfig) *pinState {
	if c.Changed == "" {
		c.Changed = PinWarn
	}
	if c.Added == "" {
		c.Added = PinWarn
	}
	return &pinState{cfg: c, hidden: map[string]toolpin.Change{}, lists: map[string]bool{}}
}

// action returns what is done about a change.
func (p *pinState) action(c toolpin.Change) PinAction {
	switch c.Kind {
	case toolpin.Changed:
		return p.cfg.Changed
	case toolpin.Added:
		return p.cfg.Added
	}
	return PinWarn // a removed tool cannot be called from the listing: nothing to hide
}

// pinGate returns why a call of tool is refused by the pins: the session
// is held, or the tool hidden; "" when neither.
func (m *Machine) pinGate(tool string) string {
	p := m.pins
	if p == nil {
		return ""
	}
	if p.held != nil {
		return fmt.Sprintf("Refused by hoist-mcp's pinned tools (--pin-tools %s): %s since it was pinned, so this session calls no tool any more and %s was not sent to the MCP server; a person must review the change (hoist tools) and pin the tools again",
			p.cfg.File, describeChange(*p.held), tool)
	}
	if c, ok := p.hidden[tool]; ok {
		return fmt.Sprintf("Refused by hoist-mcp's pinned tools (--pin-tools %s): %s since it was pinned, so it is hidden from the tool list and was not sent to the MCP server",
			p.cfg.File, describeChange(c))
	}
	return ""
}

// pinLookup takes a lookup of the flow's (a request of the proxy's own
// that a run awaits, m.pending) before it is sent, and reports whether it
// took it. The flow may call only what the agent may: while the proxy's
// own tools/list is in flight the lookup waits for its answer, as the
// agent's calls do (park); a lookup of a hidden tool, or any lookup once
// the session is held, is never sent, and the run hands back to the agent
// with what it found so far, as when a lookup goes unanswered.
func (m *Machine) pinLookup(ts ToServer) bool {
	p := m.pins
	if p == nil || !p.cfg.Acts() {
		return false
	}
	id := string(jsonrpc.Classify(jsonrpc.TrimLine(ts.Line)).ID)
	lc, ok := m.pending[id]
	if !ok {
		return false // a step of hoist_commit, gated on its own, or a listing
	}
	if m.pinsListing() {
		p.lookup = &ts
		m.say("flow: the lookup of %s waits for hoist-mcp's listing of the changed tools", lc.tool)
		return true
	}
	var why string
	switch c, hidden := p.hidden[lc.tool]; {
	case p.held != nil:
		why = describeChange(*p.held) + " since it was pinned (the session is held by --pin-tools)"
	case hidden:
		why = describeChange(c) + " since it was pinned (hidden by --pin-tools)"
	default:
		return false
	}
	delete(m.pending, id)
	if m.timerID == id {
		m.stopTimer()
	}
	m.say("flow: %s was not looked up: %s", lc.tool, why)
	m.finish()
	return true
}

// unparkLookup sends the lookup that waited for the listing, or not, now
// that the listing is checked; a lookup whose run ended meanwhile (its
// wait timed out, the session closed) is dropped.
func (m *Machine) unparkLookup() {
	ts := m.pins.lookup
	m.pins.lookup = nil
	if ts == nil {
		return
	}
	if _, ok := m.pending[string(jsonrpc.Classify(jsonrpc.TrimLine(ts.Line)).ID)]; ok {
		m.emit(*ts)
	}
}

// describeChange says a change for the agent and the operator:
// "the tool get_weather changed its description, inputSchema".
func describeChange(c toolpin.Change) string {
	switch c.Kind {
	case toolpin.Changed:
		return "the tool " + c.Tool + " changed its " + strings.Join(c.Fields, ", ")
	case toolpin.Added:
		return "the tool " + c.Tool + " is listed and was not pinned"
	}
	return "the tool " + c.Tool + " is no longer listed"
}

// checkPins compares a tools/list answer (the host's, or the proxy's own)
// with the pin file, says each change, and acts on it. It returns the
// answer as the host must see it: line itself, or without the tools it
// hides (every other byte as the server sent it), and whether it hid any.
func (m *Machine) checkPins(line []byte, msg jsonrpc.Message) (_ []byte, rewritten bool) {
	p := m.pins
	if p == nil || msg.Result == nil {
		return line, false
	}
	listed, next := toolpin.FromList(msg.Result)
	if next != "" {
		p.paged = true
	}
	pinned := map[string]bool{}
	for _, t := range p.cfg.Tools {
		pinned[t.Name] = true
	}
	changed := map[string]bool{}
	var hide []string
	for _, c := range toolpin.Compare(p.cfg.Tools, listed) {
		if c.Kind == toolpin.Removed && p.paged {
			continue // on another page, perhaps
		}
		changed[c.Tool] = true
		act := p.action(c)
		m.say("pinned tools: %s (%s)", describeChange(c), pinSaid(act))
		switch act {
		case PinHide:
			p.hidden[c.Tool] = c
			hide = append(hide, c.Tool)
		case PinHold:
			if p.held == nil {
				p.held = &c
			}
		}
	}
	for _, t := range listed {
		if pinned[t.Name] && !changed[t.Name] {
			delete(p.hidden, t.Name) // listed as pinned again
		}
	}
	if len(hide) == 0 || line == nil {
		return line, false
	}
	out, ok := withoutTools(jsonrpc.TrimLine(line), hide)
	if !ok {
		return line, false
	}
	return append(out, '\n'), true
}

func pinSaid(a PinAction) string {
	switch a {
	case PinHide:
		return "hidden from the host: its calls are refused"
	case PinHold:
		return "the session is held: every further tools/call is refused"
	}
	return "warned only: --pin-tools-action hide or hold acts on it"
}

// withoutTools returns the response line resp (a tools/list result, valid
// JSON, without terminator) without the entries of result.tools named in
// names; every other byte stays as the server sent it. ok is false when
// resp has no result with a tools list.
func withoutTools(resp []byte, names []string) (_ []byte, ok bool) {
	tools, found := mcpmsg.ToolsArray(resp)
	if !found {
		return nil, false
	}
	drop := map[string]bool{}
	for _, n := range names {
		drop[n] = true
	}
	start := jsontext.Offset(resp, tools)
	out := make([]byte, 0, len(resp))
	out = append(out, resp[:start+1]...) // through the [
	kept := 0
	for el := range jsontext.Elements(tools) {
		if t, ok := toolpin.NewTool(el); ok && drop[t.Name] {
			continue
		}
		if kept > 0 {
			out = append(out, ',')
		}
		out = append(out, el...)
		kept++
	}
	out = append(out, ']')
	return append(out, resp[start+len(tools):]...), true
}

// onListChanged takes the server's notifications/tools/list_changed,
// which goes on to the host: the next listing is checked, and when the
// pins act, the proxy lists the tools itself at once (ids
// hoist-tools-<n>), so that a host that never lists them again still
// meets the change.
func (m *Machine) onListChanged() {
	if m.pins == nil {
		return
	}
	if !m.pins.cfg.Acts() || m.gone {
		m.say("pinned tools: the MCP server says its tools changed; the next tools/list is checked against %s", m.pins.cfg.File)
		return
	}
	m.say("pinned tools: the MCP server says its tools changed; hoist-mcp lists them to check them against %s", m.pins.cfg.File)
	var id json.RawMessage
	for {
		m.pins.n++
		id = json.RawMessage(strconv.Quote("hoist-tools-" + strconv.FormatUint(m.pins.n, 10)))
		if m.cfg.IDs.Own(id) {
			break
		}
	}
	m.pins.lists[string(id)] = true
	req := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	req = append(req, `,"method":"tools/list"`...)
	if mcpmsg.IsModern(m.version) {
		req = append(append(append(req, `,"params":{"_meta":`...), mcpmsg.ModernMeta(m.version)...), '}')
	}
	req = append(req, "}\n"...)
	m.emit(ToServer{Line: req, Own: true})
}

// onOwnList takes the answer to one of the proxy's own tools/list
// requests, and reports whether it was one. Nothing of it reaches the
// host.
func (m *Machine) onOwnList(id string, msg jsonrpc.Message) bool {
	if m.pins == nil || !m.pins.lists[id] {
		return false
	}
	delete(m.pins.lists, id)
	m.checkPins(nil, msg)
	if len(m.pins.lists) == 0 {
		m.unparkLookup()
		if m.commit != nil && len(m.commit.runs) > 0 && m.commit.runs[0].wait == "" {
			m.commitNext() // a commit's next call waited for the listing
		}
		m.unpark()
	}
	return true
}

// pinsListing reports whether the proxy's own tools/list is in flight
// while the pins act: what is decided now waits for its answer.
func (m *Machine) pinsListing() bool {
	return m.pins != nil && len(m.pins.lists) > 0 && m.pins.cfg.Acts()
}

// park holds a call (*Held), a batch (*HeldBatch) or a write the judge let
// through (*released) that came while the proxy's own tools/list is in
// flight, and reports whether it did: it is decided on the listing's
// answer, so that nothing slips through between the server's
// notifications/tools/list_changed and the check of what changed. A
// parked batch keeps its own copy of the transport's bytes.
func (m *Machine) park(ev Event) bool {
	if !m.pinsListing() {
		return false
	}
	if b, ok := ev.(*HeldBatch); ok {
		b.Line = bytes.Clone(b.Line)
		for i := range b.Parts {
			b.Parts[i].ID = bytes.Clone(b.Parts[i].ID)
		}
	}
	m.pins.parked = append(m.pins.parked, ev)
	return true
}

// released is a write the confirmation judge let through while the
// proxy's own listing was in flight (release): parked, then sent or
// refused on the listing's answer, without asking the judge again.
type released struct{ j *Judging }

func (*released) event() {}

// unpark decides the parked calls, batches and judged writes, in order,
// now that the listing is checked: each is refused, or sent on by the
// Machine.
func (m *Machine) unpark() {
	parked := m.pins.parked
	m.pins.parked = nil
	for _, ev := range parked {
		var line []byte
		switch x := ev.(type) {
		case *Held:
			if !m.onHold(x) {
				line = x.Line
			}
		case *HeldBatch:
			if !m.onBatch(x) {
				line = x.Line
			}
		case *released:
			m.release(x.j)
		}
		if line != nil {
			m.emit(ToServer{Line: append(bytes.Clone(line), '\n')})
		}
	}
}

// dropParked answers each parked call with a JSON-RPC error, unsent: why
// says what ended.
func (m *Machine) dropParked(why string) {
	if m.pins == nil {
		return
	}
	for _, ev := range m.pins.parked {
		switch x := ev.(type) {
		case *Held:
			msg := why + " before the MCP server listed its changed tools, so " + x.Req.Call.Name + " was not sent to the MCP server"
			m.answer(mcpmsg.AppendError(nil, json.RawMessage(x.Req.ID), ErrSessionEnded, msg))
			m.say("pinned tools: %s", msg)
		case *released:
			if x.j.hold != nil {
				msg := why + " before the MCP server listed its changed tools, so " + x.j.Call.Name + " was not sent to the MCP server"
				m.answer(mcpmsg.AppendError(nil, x.j.ID, ErrSessionEnded, msg))
				m.say("pinned tools: %s", msg)
			}
		case *HeldBatch:
			msg := why + " before the MCP server listed its changed tools, so the batch was not sent to the MCP server"
			out := []byte{'['}
			for _, p := range x.Parts {
				if p.IsReq {
					if len(out) > 1 {
						out = append(out, ',')
					}
					out = mcpmsg.AppendError(out, p.ID, ErrSessionEnded, msg)
				}
			}
			if len(out) > 1 {
				m.answer(append(out, ']'))
			}
			m.say("pinned tools: %s", msg)
		}
	}
	m.pins.parked = nil
	m.pins.lookup = nil
	clear(m.pins.lists)
}
