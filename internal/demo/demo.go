// Package demo is hoist-mcp-demo: a tiny MCP server over stdio or
// Streamable HTTP for trying the proxy (hoist-mcp manual, "Try it"). It
// serves one of three worlds. The echo world (the default) stores nothing:
// its two tools answer with their arguments, lookup annotated read-only and
// update annotated as not read-only; "fail": true makes either return an
// error result, and "delay_ms": n makes it wait n milliseconds first. The
// retail world (NewRetail) is a tiny shop with five of τ²-bench retail's
// tools and canned data. The τ²-bench retail world (NewTau2Retail) is
// τ²-bench's own retail domain, all sixteen tools over its database, for
// replaying recorded agents against the environment they met (issue 16).
// Calls are served concurrently, so delayed calls overlap, except in the
// τ²-bench world, which runs them in order as τ²-bench does.
package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/mcpmsg"
)

// ProtocolVersions are the MCP revisions of the session era the demo
// speaks, oldest first: the versions initialize may agree on.
var ProtocolVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// ModernVersions are the revisions of the stateless era it speaks
// (mcpmsg.IsModern), where there is no initialize: a host opens with
// server/discover, and each request names its version in its _meta. The
// demo speaks every revision the proxy does, so that any host can try it
// through hoist-mcp.
var ModernVersions = []string{mcpmsg.ProtocolModern}

// Server is the demo's MCP logic, shared by its stdio and HTTP transports.
type Server struct {
	// Version is reported in serverInfo.
	Version string
	// World is what the server serves; nil serves the echo world.
	World World
}

// World is what a demo server serves: its tools and their answers. Call may
// be called concurrently.
type World interface {
	// Tools returns the tools/list result's tools, in order.
	Tools() []any
	// Instructions returns the initialize result's instructions.
	Instructions() string
	// Call answers a tools/call of the tool name; known is false when the
	// world lists no such tool.
	Call(ctx context.Context, name string, args map[string]any) (result any, known bool)
}

func (s *Server) world() World {
	if s.World == nil {
		return Echo{}
	}
	return s.World
}

// Echo is the default world: lookup and update store nothing and answer
// with their arguments.
type Echo struct{}

var _ World = Echo{}

// Instructions implements World.
func (Echo) Instructions() string {
	return "A demo server: lookup and update answer with their arguments."
}

// Tools implements World.
func (Echo) Tools() []any {
	schema := func() map[string]any {
		return map[string]any{
			"type": "object",
			"properties": map[string]any{
				"text":     map[string]any{"type": "string", "description": "Any text; it is echoed back."},
				"fail":     map[string]any{"type": "boolean", "description": "Return an error result instead."},
				"delay_ms": map[string]any{"type": "integer", "minimum": 0, "description": "Wait this long before answering."},
			},
			"additionalProperties": true,
		}
	}
	return []any{
		map[string]any{
			"name":        "lookup",
			"title":       "Look something up",
			"description": "Reads nothing and answers with its arguments. Annotated read-only.",
			"inputSchema": schema(),
			"annotations": map[string]any{"readOnlyHint": true},
		},
		map[string]any{
			"name":        "update",
			"title":       "Update something",
			"description": "Changes nothing and answers with its arguments. Annotated as not read-only.",
			"inputSchema": schema(),
			"annotations": map[string]any{"readOnlyHint": false, "destructiveHint": false},
		},
	}
}

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// Serve reads requests from in until it ends, answering on out, then waits
// for calls still running. Calls run concurrently, except in a Sequential
// world, which answers each before it reads the next line. Lines that are not JSON are answered with a parse
// error; notifications and responses need no answer.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	var mu sync.Mutex // serializes writes
	send := func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		out.Write(append(b, '\n'))
	}
	var wg sync.WaitGroup
	sq, ok := s.world().(Sequential)
	inOrder := ok && sq.Sequential()
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if call := s.Handle(line, send); call != nil && inOrder {
				call(ctx) // answered before the next line is read
			} else if call != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					call(ctx)
				}()
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			wg.Wait()
			return fmt.Errorf("reading stdin: %w", err)
		}
	}
	wg.Wait()
	return nil
}

// Handle answers one message through send. A tools/call is returned as a
// function for the caller to run (concurrently, on stdio), since it may
// wait for delay_ms; everything else is answered before Handle returns.
func (s *Server) Handle(line []byte, send func([]byte)) func(context.Context) {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		send(marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700, "message": "parse error"}}))
		return nil
	}
	if req.ID == nil || string(req.ID) == "null" {
		return nil // notifications need no answer; responses to us are unexpected
	}
	id := req.ID
	modern := mcpmsg.ReadRequestMeta(req.Params).ProtocolVersion
	result := func(r map[string]any) {
		if mcpmsg.IsModern(modern) || req.Method == mcpmsg.MethodDiscover {
			r = s.modernResult(r)
		}
		send(marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": r}))
	}
	fail := func(code int, msg string) {
		send(marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}}))
	}
	if mcpmsg.IsModern(modern) && !slices.Contains(ModernVersions, modern) {
		send(marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{
			"code": mcpmsg.CodeUnsupportedProtocolVersion, "message": "unsupported protocol version: " + modern,
			"data": map[string]any{"supported": s.supportedVersions(), "requested": modern},
		}}))
		return nil
	}
	switch req.Method {
	case mcpmsg.MethodDiscover:
		result(map[string]any{
			"supportedVersions": s.supportedVersions(),
			"capabilities":      map[string]any{"tools": map[string]any{}},
			"instructions":      s.world().Instructions(),
		})
	case "initialize":
		result(map[string]any{
			"protocolVersion": Negotiate(req.Params),
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "hoist-mcp-demo", "version": s.Version},
			"instructions":    s.world().Instructions(),
		})
	case "ping":
		result(map[string]any{})
	case "tools/list":
		result(map[string]any{"tools": s.world().Tools()})
	case "tools/call":
		var p struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil {
			fail(-32602, "invalid params: "+err.Error())
			return nil
		}
		w := s.world()
		return func(ctx context.Context) {
			r, known := w.Call(ctx, p.Name, p.Arguments)
			if !known {
				fail(-32602, fmt.Sprintf("unknown tool: %s", p.Name))
				return
			}
			m, ok := r.(map[string]any)
			if !ok { // a world's own result type: as its JSON says
				b, _ := json.Marshal(r)
				json.Unmarshal(b, &m)
			}
			result(m)
		}
	default:
		fail(-32601, "method not found: "+req.Method)
	}
	return nil
}

// supportedVersions are the versions server/discover names, newest first.
func (s *Server) supportedVersions() []string {
	all := append(slices.Clone(ModernVersions), ProtocolVersions...)
	slices.Reverse(all[len(ModernVersions):])
	slices.Reverse(all[:len(ModernVersions)])
	return all
}

// modernResult is r as the stateless era answers: marked complete, with
// the server's identity in its _meta, since no initialize told it
// (2026-07-28 basic/index, "ResultType" and "_meta"). r is a fresh map.
func (s *Server) modernResult(r map[string]any) map[string]any {
	out := make(map[string]any, len(r)+2)
	for k, v := range r {
		out[k] = v
	}
	out["resultType"] = mcpmsg.ResultComplete
	out["_meta"] = map[string]any{mcpmsg.MetaServerInfo: map[string]any{"name": "hoist-mcp-demo", "version": s.Version}}
	return out
}

// Negotiate returns the protocol version to answer an initialize with: the
// one asked for when the demo speaks it, else its latest.
func Negotiate(params json.RawMessage) string {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	json.Unmarshal(params, &p)
	for _, known := range ProtocolVersions {
		if known == p.ProtocolVersion {
			return known
		}
	}
	return ProtocolVersions[len(ProtocolVersions)-1]
}

// Call implements World: it answers lookup and update with their
// arguments, after delay_ms.
func (Echo) Call(ctx context.Context, name string, args map[string]any) (any, bool) {
	if name != "lookup" && name != "update" {
		return nil, false
	}
	if args == nil {
		args = map[string]any{}
	}
	if d, ok := args["delay_ms"].(float64); ok && d > 0 {
		t := time.NewTimer(time.Duration(d) * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	text, _ := json.Marshal(args)
	failed, _ := args["fail"].(bool)
	return textResult(string(text), failed), true
}

// textResult is a tools/call result of one text item.
func textResult(text string, isError bool) map[string]any {
	return map[string]any{
		"content": []any{map[string]any{"type": "text", "text": text}},
		"isError": isError,
	}
}

// marshal writes one message. Maps marshal with sorted keys, so answers are
// byte-stable.
func marshal(msg map[string]any) []byte {
	b, err := json.Marshal(msg)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg["id"], "error": map[string]any{"code": -32603, "message": err.Error()}})
	}
	return b
}
