// Package hold is the console's side of holding a frame (issue 15, point
// 3): what a person may do with a request or response that hoist-mcp
// holds for an attached console, the lifting of an injected value into
// the result a method must return, the abort error, and the loop hold.
// It is pure logic, with no connection of its own: the proxy's seam (being
// built in proxy/ for guards and hoist_commit) asks it what to answer, and
// docs/console.md, "Holding a frame", describes the attach protocol and the
// hooks the proxy gives it.
//
// The rules are the peer proxy's gates made ours (the seeds' GraphMind
// manual, "Gate points", "What you inject", "Loop hold"), and fail-open: a
// frame no console answers is continued unchanged.
package hold

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// AbortCode is the JSON-RPC error code of a frame a person aborted: the
// requester is answered with it instead of the server's answer.
const AbortCode = -32099

// AbortMessage is the abort error's message.
const AbortMessage = "aborted from the hoist console"

// Action is what a person does with a held frame.
type Action string

// The actions, as the console's page offers them.
const (
	// Continue forwards the frame unchanged.
	Continue Action = "continue"
	// Inject answers a held request with a value instead of forwarding it,
	// forwards a held response rewritten to carry the value, or forwards a
	// held notification with the value (an object) as its params.
	Inject Action = "inject"
	// Retry re-sends a held response's request to the server (for a held
	// request it is Continue: nothing has run yet).
	Retry Action = "retry"
	// Abort answers the requester with AbortCode.
	Abort Action = "abort"
)

// ParseAction reads an action's name as the page sends it.
func ParseAction(s string) (Action, error) {
	switch a := Action(s); a {
	case Continue, Inject, Retry, Abort:
		return a, nil
	}
	return "", fmt.Errorf("action %q: want continue, inject, retry or abort", s)
}

// Point is where a frame is held: a request before it reaches its
// receiver, or a response (or an error, or a tool result with isError)
// before it reaches the requester.
type Point uint8

// The points of a frame.
const (
	Before Point = iota
	After
)

// Verdict is what the proxy does with a held frame, whatever the person
// chose: Forward it (Line, when set, in its place), Answer the requester
// with Line and forward nothing, Resend the original request, or Drop it
// (a notification aborted).
type Verdict struct {
	Forward bool
	Answer  bool
	Resend  bool
	Drop    bool
	// Line is the frame to forward or to answer with, without a line end;
	// nil with Forward means the held frame itself.
	Line []byte
}

// Decide turns a person's action on a frame held at p into the proxy's
// verdict. id is the request's id (raw JSON; nil for a notification),
// method its method, value what was injected (raw JSON) and modern whether
// the session speaks the stateless era (2026-07-28), whose results carry a
// resultType.
func Decide(p Point, a Action, id []byte, method string, value []byte, modern bool) (Verdict, error) {
	notification := len(id) == 0
	switch a {
	case Continue:
		return Verdict{Forward: true}, nil
	case Retry:
		if p == Before {
			return Verdict{Forward: true}, nil // nothing has run yet
		}
		return Verdict{Resend: true}, nil
	case Abort:
		if notification {
			return Verdict{Drop: true}, nil
		}
		return Verdict{Answer: p == Before, Forward: p == After, Line: mcpmsg.AppendError(nil, id, AbortCode, AbortMessage)}, nil
	case Inject:
		if !jsontext.Valid(value) {
			return Verdict{}, fmt.Errorf("inject: the value is not JSON")
		}
		if notification {
			// A notification has no answer: the value takes its place. A
			// whole frame is sent as it is; any other object is the
			// notification's params, under its own method.
			switch {
			case isFrame(value):
				return Verdict{Forward: true, Line: jsontext.AppendCompact(nil, value)}, nil
			case jsontext.Kind(value) == '{':
				line := append([]byte(`{"jsonrpc":"2.0","method":`), jsontext.AppendString(nil, method, jsontext.Plain)...)
				line = append(append(line, `,"params":`...), jsontext.AppendCompact(nil, value)...)
				return Verdict{Forward: true, Line: append(line, '}')}, nil
			}
			return Verdict{}, fmt.Errorf("inject: a notification takes an object, its new params, or a whole frame (an object with \"jsonrpc\")")
		}
		line := Frame(id, method, value, modern)
		if p == Before {
			return Verdict{Answer: true, Line: line}, nil
		}
		return Verdict{Forward: true, Line: line}, nil
	}
	return Verdict{}, fmt.Errorf("action %q: want continue, inject, retry or abort", a)
}

// Frame is the response to id carrying value lifted into method's result
// (Lift); a value that is a whole frame is that frame, verbatim.
func Frame(id []byte, method string, value []byte, modern bool) []byte {
	if isFrame(value) {
		return jsontext.AppendCompact(nil, value)
	}
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = append(b, `,"result":`...)
	b = append(b, Lift(method, value, modern)...)
	return append(b, '}')
}

// isFrame reports whether value is a whole JSON-RPC frame: an object with
// a "jsonrpc" member, which is sent as it is (the way to answer with an
// error rather than a result).
func isFrame(value []byte) bool {
	if jsontext.Kind(value) != '{' {
		return false
	}
	_, ok := jsontext.Lookup(value, "jsonrpc")
	return ok
}

// Lift returns value in the shape method's result must have, since the
// host's SDK checks a result's type (the seeds' GraphMind manual, "What you
// inject"). For tools/call: a string becomes one text block; an object
// already shaped as a result (content or structuredContent present) stays
// as it is; any other object becomes a text block of its JSON plus
// structuredContent, so a tool with an outputSchema accepts it; any other
// value a text block of its JSON. resources/read, prompts/get and
// sampling/createMessage lift a bare value into their own results; another
// method's value is sent as it was typed. In the stateless era a lifted
// result also carries resultType "complete" (and resources/read ttlMs 0 and
// cacheScope "private"), without which its client refuses it.
func Lift(method string, value []byte, modern bool) []byte {
	v := jsontext.AppendCompact(nil, value)
	var out []byte
	switch method {
	case "tools/call":
		switch {
		case jsontext.Kind(v) == '"':
			out = textContent(jsontext.Unquote(v), nil)
		case jsontext.Kind(v) == '{' && (has(v, "content") || has(v, "structuredContent")):
			out = v
		case jsontext.Kind(v) == '{':
			out = textContent(string(v), v)
		default:
			out = textContent(string(v), nil)
		}
	case "resources/read":
		if jsontext.Kind(v) == '{' && has(v, "contents") {
			out = v
		} else {
			out = append(append([]byte(`{"contents":[{"uri":"hoist-console:injected","text":`), textOf(v)...), "}]}"...)
		}
	case "prompts/get":
		if jsontext.Kind(v) == '{' && has(v, "messages") {
			out = v
		} else {
			out = append(append([]byte(`{"messages":[{"role":"user","content":{"type":"text","text":`), textOf(v)...), "}}]}"...)
		}
	case "sampling/createMessage":
		if jsontext.Kind(v) == '{' && has(v, "content") {
			out = v
		} else {
			out = append(append([]byte(`{"role":"assistant","model":"hoist-console","content":{"type":"text","text":`), textOf(v)...), "}}"...)
		}
	default:
		return v
	}
	if modern && jsontext.Kind(out) == '{' && !has(out, "resultType") {
		extra := `"resultType":"complete"`
		if method == "resources/read" {
			extra += `,"ttlMs":0,"cacheScope":"private"`
		}
		out = addMembers(out, extra)
	}
	return out
}

func has(obj []byte, name string) bool {
	_, ok := jsontext.Lookup(obj, name)
	return ok
}

// textOf is a value as a JSON string: a string as it is, anything else its
// JSON text.
func textOf(v []byte) []byte {
	if jsontext.Kind(v) == '"' {
		return v
	}
	return jsontext.AppendString(nil, string(v), jsontext.Plain)
}

func textContent(text string, structured []byte) []byte {
	b := []byte(`{"content":[{"type":"text","text":`)
	b = jsontext.AppendString(b, text, jsontext.Plain)
	b = append(b, "}]"...)
	if structured != nil {
		b = append(append(b, `,"structuredContent":`...), structured...)
	}
	return append(b, '}')
}

// addMembers adds members (JSON text, without braces) at the end of obj,
// a compact object.
func addMembers(obj []byte, members string) []byte {
	body := obj[1 : len(obj)-1]
	out := append([]byte{'{'}, body...)
	if len(body) > 0 {
		out = append(out, ',')
	}
	return append(append(out, members...), '}')
}

// Digest returns the digest of a frame held at point p: "sha256:" and the
// hex SHA-256 of the canonical JSON (jsontext.Canonical: members sorted,
// strings written one way) of {"point", "frame"}, so a request's method,
// tool and arguments, or a response's result, are what it names, however
// they are spelled. A console's verdict carries the digest of the frame
// it decides; the proxy releases a frame only with a verdict that names
// its digest (docs/approvals.md).
func Digest(p Point, frame []byte) string {
	point := "before"
	if p == After {
		point = "after"
	}
	tree := map[string]any{"point": point}
	if v, ok := jsontext.Parse(frame); ok {
		tree["frame"] = v
	} else {
		tree["frame_bytes"] = string(frame)
	}
	sum := sha256.Sum256([]byte(jsontext.Canonical(tree)))
	return "sha256:" + hex.EncodeToString(sum[:])
}
