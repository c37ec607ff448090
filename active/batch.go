package active

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
// passes as any other line. With --pin-tools acting, a held batch that comes
// while the proxy re-lists the tools waits for that listing (park), as a
// single call does.

// batchNotSent says why a request of a batch the proxy answered was not
// sent.
const batchNotSent = "another call of the same batch was refused (by the policy check or a limit), or was a write sent as a notification, so nothing of the batch was sent"

// ScreenBatch reads a batch of the host's part by part, and reports
// whether it holds a call the Machine must judge (a write the guards check,
// hoist_commit, or such a call sent as a notification): then the batch
// waits for the Machine's verdict whole (HeldBatch). Otherwise its
// requests are only learnt from (Parts[i].Req when Parts[i].Learn).
func (m *Machine) ScreenBatch(v mcpmsg.View) (b *HeldBatch, held bool) {
	b = &HeldBatch{Line: v.Raw}
	for _, mv := range v.Parts {
		p := Part{ID: mv.ID, IsReq: mv.Kind == jsonrpc.Request, Dropped: m.heldNotification(mv)}
		held = held || p.Dropped
		if ev, ok := RequestOf(mv); ok {
			p.Req, p.Learn = ev, true
			p.ToolCall = ev.Method == mcpmsg.MethodToolsCall
			if p.ToolCall && m.Holds(ev.Call.Name) {
				held = true
				p.Odd = m.heldOdd(mv)
			}
		}
		b.Parts = append(b.Parts, p)
	}
	return b, held
}

// onBatch judges the held calls of a batch, in order, and reports whether
// the proxy answered it (nothing of it is forwarded).
func (m *Machine) onBatch(b *HeldBatch) (taken bool) {
	if m.park(b) {
		return true // decided once the proxy's own tools/list is answered
	}
	m.hear(b.Heard)
	type judged struct {
		c    guards.Check
		call mcpmsg.Call
		id   json.RawMessage
		took time.Duration
	}
	var checks []judged
	refused := map[int]string{} // part index → the text of its answer
	var undo []func()           // the limits' counts of the calls let through
	dropped := false
	for i, p := range b.Parts {
		dropped = dropped || p.Dropped
		if !p.ToolCall || !m.Holds(p.Req.Call.Name) {
			continue
		}
		if p.Odd != "" {
			refused[i] = p.Odd
			continue
		}
		if p.Req.Call.Name == mcpmsg.CommitTool && m.commit != nil && !m.commit.listed {
			refused[i] = "hoist_commit was not run: send it on its own, not in a batch"
			continue
		}
		if why := m.gate(p.ID, nil, p.Req.Call); why != "" {
			refused[i] = why
			m.say("refused %s: %s", p.Req.Call.Name, why)
			continue
		}
		if m.gd == nil || !m.gd.writes[p.Req.Call.Name] {
			undo = append(undo, m.lim.take(p.Req.Call.Name, m.now()))
			continue
		}
		c, took := m.checkCall(p.Req.Call)
		checks = append(checks, judged{c, p.Req.Call, p.ID, took})
		if c.Refused != nil {
			refused[i] = c.Refusal()
		} else {
			// Counted now, so the batch's next calls see it.
			undo = append(undo, m.lim.take(p.Req.Call.Name, m.now()))
		}
	}
	if len(refused) > 0 || dropped {
		for _, u := range undo {
			u() // nothing of the batch is sent
		}
	}
	if len(refused) == 0 && !dropped {
		for _, p := range b.Parts {
			if !p.Learn {
				continue
			}
			if p.ToolCall && m.gd != nil && m.gd.writes[p.Req.Call.Name] {
				m.gd.s.Sent(p.Req.Call.Name, p.Req.Call.Args)
			}
			m.onHost(p.Req)
		}
	} else {
		out := []byte{'['}
		for i, p := range b.Parts {
			if !p.IsReq {
				continue // a notification gets no answer
			}
			if len(out) > 1 {
				out = append(out, ',')
			}
			switch text, ok := refused[i]; {
			case ok:
				out = mcpmsg.AppendToolResult(out, p.ID, text, true, nil)
			case p.ToolCall:
				out = mcpmsg.AppendToolResult(out, p.ID, "Not run: "+batchNotSent, true, nil)
			default:
				out = mcpmsg.AppendError(out, p.ID, -32603, "not sent: "+batchNotSent)
			}
		}
		if len(out) > 1 {
			m.answer(append(out, ']'))
		}
		taken = true
	}
	for _, j := range checks {
		m.logCheck(j.id, nil, j.call, j.c, j.took)
	}
	return taken
}
