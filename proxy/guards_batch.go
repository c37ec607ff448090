package proxy

import (
	"encoding/json"
	"time"

	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// A batch (a JSON array of messages, which MCP 2025-03-26 allowed) must not
// carry a write past the guards. A batch holding a write the guards check,
// or a hoist_commit, is held whole and each such call judged in order. If
// every one is allowed the batch goes on byte for byte. If one is refused,
// or a hoist_commit is in it (which runs on its own, never inside a
// batch), nothing of the batch reaches the server: the proxy answers it
// with a batch of its own, the refusals for the refused calls and, for every
// other request, an error saying it was not sent. A batch with no such call
// passes as any other line.

// batchNotSent says why a request of a batch the proxy answered was not
// sent.
const batchNotSent = "another call of the same batch was refused by the policy check (or was a write sent as a notification), so nothing of the batch was sent"

// batchEvent is a batch of the host's holding a call the proxy must judge.
type batchEvent struct {
	line   []byte
	events []batchPart
	taken  chan bool
}

// batchPart is one message of a held batch: its event, when the owner
// learns from it, and its id (raw) when it is a request.
type batchPart struct {
	ev       hostEvent
	learn    bool // ev is set
	id       json.RawMessage
	request  bool
	toolCall bool
	// dropped is a write sent as a notification: never forwarded.
	dropped bool
	// odd is why a held call is refused before any rule reads it
	// (heldOdd), "" when it is not.
	odd string
}

// hostBatch holds a batch with a call the proxy judges until the owner has
// decided, and reports whether the proxy answered it.
func (a *active) hostBatch(v mcpmsg.View) (taken bool) {
	b := batchEvent{line: v.Raw, taken: make(chan bool, 1)}
	held := false
	for _, m := range v.Parts {
		p := batchPart{id: m.ID, request: m.Kind == jsonrpc.Request, dropped: a.heldNotification(m)}
		held = held || p.dropped
		if ev, ok := hostEventOf(m); ok {
			p.ev, p.learn = ev, true
			p.toolCall = ev.method == mcpmsg.MethodToolsCall
			if p.toolCall && a.holds(ev.call.Name) {
				held = true
				p.odd = a.heldOdd(m)
			}
		}
		b.events = append(b.events, p)
	}
	if !held {
		for _, p := range b.events {
			if p.learn {
				a.send(p.ev)
			}
		}
		return false
	}
	return a.ask(b, b.taken, false)
}

// onBatch judges the held calls of a batch, in order, and gives the
// transport its verdict.
func (a *active) onBatch(b batchEvent) {
	type judged struct {
		c    guards.Check
		call mcpmsg.Call
		id   json.RawMessage
		took time.Duration
	}
	var checks []judged
	refused := map[int]string{} // part index → the text of its answer
	dropped := false
	for i, p := range b.events {
		dropped = dropped || p.dropped
		if !p.toolCall || !a.holds(p.ev.call.Name) {
			continue
		}
		if p.odd != "" {
			refused[i] = p.odd
			continue
		}
		if p.ev.call.Name == mcpmsg.CommitTool && a.commit != nil && !a.commit.listed {
			refused[i] = "hoist_commit was not run: send it on its own, not in a batch"
			continue
		}
		if a.gd == nil || !a.gd.writes[p.ev.call.Name] {
			continue
		}
		c, took := a.judge(p.ev.call)
		checks = append(checks, judged{c, p.ev.call, p.id, took})
		if c.Refused != nil {
			refused[i] = c.Refusal()
		}
	}
	if len(refused) == 0 && !dropped {
		b.taken <- false
		for _, p := range b.events {
			if !p.learn {
				continue
			}
			if p.toolCall && a.gd != nil && a.gd.writes[p.ev.call.Name] {
				a.gd.s.Sent(p.ev.call.Name, p.ev.call.Args)
			}
			if a.commit != nil && !p.toolCall {
				a.rewrites.Store(p.ev.id, true)
			}
			a.onHost(p.ev)
		}
	} else {
		out := []byte{'['}
		for i, p := range b.events {
			if !p.request {
				continue // a notification gets no answer
			}
			if len(out) > 1 {
				out = append(out, ',')
			}
			switch text, ok := refused[i]; {
			case ok:
				out = mcpmsg.AppendToolResult(out, p.id, text, true, nil)
			case p.toolCall:
				out = mcpmsg.AppendToolResult(out, p.id, "Not run: "+batchNotSent, true, nil)
			default:
				out = mcpmsg.AppendError(out, p.id, -32603, "not sent: "+batchNotSent)
			}
		}
		if len(out) > 1 {
			a.answer(append(out, ']'))
		}
		b.taken <- true
	}
	for _, j := range checks {
		a.logCheck(j.id, nil, j.call, j.c, j.took)
	}
}
