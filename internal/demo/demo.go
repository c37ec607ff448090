// Package demo is hoist-mcp-demo: a tiny MCP server over stdio for trying
// the proxy (hoist-mcp manual, "Try it"). It stores nothing. Its two tools
// answer with their arguments: lookup, annotated read-only, and update,
// annotated as not read-only. "fail": true makes either return an error
// result, and "delay_ms": n makes it wait n milliseconds first; calls are
// served concurrently, so delayed calls overlap.
package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// ProtocolVersions are the MCP revisions the demo speaks, oldest first.
var ProtocolVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// Server serves MCP over one pair of streams.
type Server struct {
	// Version is reported in serverInfo.
	Version string

	mu  sync.Mutex // serializes writes
	out io.Writer
	wg  sync.WaitGroup
}

// Tools returns the demo's tools/list result.
func Tools() []map[string]any {
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
	return []map[string]any{
		{
			"name":        "lookup",
			"title":       "Look something up",
			"description": "Reads nothing and answers with its arguments. Annotated read-only.",
			"inputSchema": schema(),
			"annotations": map[string]any{"readOnlyHint": true},
		},
		{
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
// for calls still running. Lines that are not JSON-RPC requests are answered
// with a parse or invalid-request error when they carry an id, and ignored
// otherwise.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	s.out = out
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			s.handle(ctx, line)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			s.wg.Wait()
			return fmt.Errorf("reading stdin: %w", err)
		}
	}
	s.wg.Wait()
	return nil
}

func (s *Server) handle(ctx context.Context, line []byte) {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		s.send(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700, "message": "parse error"}})
		return
	}
	if req.ID == nil || string(req.ID) == "null" {
		return // notifications need no answer; responses to us are unexpected
	}
	id := req.ID
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(req.Params, &p)
		v := ProtocolVersions[len(ProtocolVersions)-1]
		for _, known := range ProtocolVersions {
			if known == p.ProtocolVersion {
				v = known
			}
		}
		s.result(id, map[string]any{
			"protocolVersion": v,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "hoist-mcp-demo", "version": s.Version},
			"instructions":    "A demo server: lookup and update answer with their arguments.",
		})
	case "ping":
		s.result(id, map[string]any{})
	case "tools/list":
		s.result(id, map[string]any{"tools": Tools()})
	case "tools/call":
		var p struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil {
			s.fail(id, -32602, "invalid params: "+err.Error())
			return
		}
		if p.Name != "lookup" && p.Name != "update" {
			s.fail(id, -32602, fmt.Sprintf("unknown tool: %s", p.Name))
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.call(ctx, id, p.Arguments)
		}()
	default:
		s.fail(id, -32601, "method not found: "+req.Method)
	}
}

// call answers a tools/call with its arguments, after delay_ms.
func (s *Server) call(ctx context.Context, id json.RawMessage, args map[string]any) {
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
	s.result(id, map[string]any{
		"content": []any{map[string]any{"type": "text", "text": string(text)}},
		"isError": failed,
	})
}

func (s *Server) result(id json.RawMessage, result any) {
	s.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (s *Server) fail(id json.RawMessage, code int, msg string) {
	s.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

// send writes one message as one line. Maps marshal with sorted keys, so
// answers are byte-stable.
func (s *Server) send(msg map[string]any) {
	b, err := json.Marshal(msg)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg["id"], "error": map[string]any{"code": -32603, "message": err.Error()}})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.Write(append(b, '\n'))
}
