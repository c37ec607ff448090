// Command hoist-mcp-demo is a tiny MCP server on stdio for trying hoist-mcp.
// Its two tools store nothing and answer with their arguments: lookup,
// annotated read-only, and update, annotated as not read-only. "fail": true
// makes either return an error result, and "delay_ms": n makes it wait
// before answering; calls run concurrently.
package main
