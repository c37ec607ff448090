package proxy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
)

// modernServer is a stdio server of the stateless era (2026-07-28), for
// HOIST_FAKE_SERVER=modern. It refuses a request that does not name its
// version in _meta, as such a server must, unless a host opened a session
// of the older era with initialize (it serves both); server/discover names it
// hoist-mcp-demo. tools/call answers with its arguments as text, like the
// demo's lookup, every result with resultType; arguments with "confirm"
// are answered input_required until the call comes again with
// inputResponses; "code": N answers with that JSON-RPC error; "hang" is
// never answered; "progress" sends a progress notification for the call's
// token first. Every line it reads is copied to $HOIST_FAKE_TEE when set.
func modernServer() int {
	var tee io.Writer = io.Discard
	if path := os.Getenv("HOIST_FAKE_TEE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return 99
		}
		defer f.Close()
		tee = f
	}
	var mu sync.Mutex
	send := func(v any) {
		b, _ := json.Marshal(v)
		mu.Lock()
		defer mu.Unlock()
		os.Stdout.Write(append(b, '\n'))
	}
	br := bufio.NewReader(os.Stdin)
	legacy := false
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			tee.Write(line)
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Arguments      map[string]json.RawMessage `json:"arguments"`
					InputResponses json.RawMessage            `json:"inputResponses"`
					Meta           map[string]json.RawMessage `json:"_meta"`
				} `json:"params"`
			}
			if json.Unmarshal(line, &req) == nil && req.ID != nil && req.Method != "" {
				if req.Method == "initialize" {
					legacy = true
					send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
						"serverInfo": map[string]any{"name": "hoist-mcp-demo", "version": "0"}}})
					continue
				}
				answerModern(send, req.ID, req.Method, req.Params.Arguments, req.Params.InputResponses != nil, req.Params.Meta, legacy)
			}
		}
		if err != nil {
			return 0
		}
	}
}

func answerModern(send func(any), id json.RawMessage, method string, args map[string]json.RawMessage, retry bool, meta map[string]json.RawMessage, legacy bool) {
	result := func(r map[string]any) { send(map[string]any{"jsonrpc": "2.0", "id": id, "result": r}) }
	fail := func(code int, msg string) {
		send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	}
	if _, ok := meta["io.modelcontextprotocol/protocolVersion"]; !ok && !legacy {
		fail(-32602, "missing _meta io.modelcontextprotocol/protocolVersion")
		return
	}
	switch method {
	case "server/discover":
		result(map[string]any{"resultType": "complete", "supportedVersions": []string{"2026-07-28"}, "capabilities": map[string]any{"tools": map[string]any{}},
			"_meta": map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "hoist-mcp-demo", "version": "0"}}})
	case "tools/list":
		result(map[string]any{"tools": []any{map[string]any{"name": "lookup", "inputSchema": map[string]any{"type": "object"}, "annotations": map[string]any{"readOnlyHint": true}}}})
	case "tools/call":
		if _, ok := args["hang"]; ok {
			return
		}
		if code, ok := args["code"]; ok {
			var n int
			json.Unmarshal(code, &n)
			if n == -32022 {
				send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": n, "message": "Unsupported protocol version",
					"data": map[string]any{"supported": []string{"2026-07-28"}, "requested": "1900-01-01"}}})
				return
			}
			fail(n, fmt.Sprintf("error %d", n))
			return
		}
		if _, ok := args["progress"]; ok {
			if tok, ok := meta["progressToken"]; ok {
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": tok, "progress": 1}})
			}
		}
		if _, ok := args["confirm"]; ok && !retry {
			result(map[string]any{"resultType": "input_required", "requestState": "st",
				"inputRequests": map[string]any{"ok": map[string]any{"method": "elicitation/create", "params": map[string]any{"message": "Sure?", "requestedSchema": map[string]any{"type": "object"}}}}})
			return
		}
		text, _ := json.Marshal(args)
		result(map[string]any{"resultType": "complete", "content": []any{map[string]any{"type": "text", "text": string(text)}}, "isError": false})
	default:
		fail(-32601, "method not found: "+method)
	}
}
