// Package procedure is the scripted MCP client behind hoist-procedure: it
// runs a procedure file (steps of tool calls whose arguments bind to earlier
// results with flow's binding expressions, one LLM turn per step, a think
// time between turns) against an MCP server with no model, and reports the
// LLM turns it made and skipped (issue 4, point 6; docs/procedure.md).
//
// When hoist-mcp serves a flow in front of the server, a result may carry
// one more text item listing lookups the proxy made on its own (hoist-mcp
// manual, "Active mode"). The procedure reads them, and a later call with the
// same tool and arguments is not made: the lookup's result stands for it, as
// it would for an agent that reads the item. A step whose calls were all so
// answered is an LLM turn saved. Everything is deterministic: requests are
// numbered from 1, a turn's calls are sent in the file's order, and the
// report holds no times.
package procedure
