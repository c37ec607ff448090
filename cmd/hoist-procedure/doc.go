// Command hoist-procedure runs a procedure file against an MCP server with
// no model: the scripted agent of hoist's demo and end-to-end tests.
//
//	hoist-procedure [flags] FILE -- SERVER_COMMAND [ARGS...]
//	hoist-procedure --list
//
// FILE is a procedure file, or the name of an example procedure the
// program carries (cancel-order, order-status, review-orders: the files of
// testdata/procedures/retail, for hoist-mcp-demo --world retail); --list
// names them with their parameters.
//
// It starts the server command and speaks MCP on its stdin and stdout
// (initialize, notifications/initialized, tools/list, tools/call). Each step
// of the file is one LLM turn: its calls go out together, with arguments
// bound to the procedure's parameters (--param NAME=VALUE), constants, and
// earlier results through the binding expressions that flows use
// ($last[tool].member, $result.orders[*], $call[N]…). A think time passes
// before each LLM turn after the first (--think, else the step's or the
// file's think_ms, else 600 ms).
//
// In front of hoist-mcp serving a flow, a result may carry the proxy's
// "Also looked up automatically" item; a later call with the same tool and
// arguments is then not made (unless the procedure wrote in between), its
// result taken from the lookup, and a step whose calls were all answered so
// is reported as a skipped LLM turn.
//
// hoist-procedure replay [flags] LOG -- SERVER_COMMAND plays back the agent
// of a recorded session instead (--tau2 FILE --sim ID: a simulation of a
// τ²-bench results file): its LLM turns in order, each turn's calls with
// their recorded arguments, the recorded time between them (--time-scale),
// and the conversation, written to --context FILE as it happened. A call a
// flow's lookup already answered since the last write is skipped, and a
// turn whose every call was; the report counts the turns and calls made and
// skipped, the lookups and those used, and the reads whose live result is
// the recorded one.
//
// The report lists each step and call, then the LLM turns made and skipped;
// --json writes it as JSON. Exit status: 0 when every step ran, 1 when the
// run failed, 2 for a usage error or a bad procedure file (one line naming
// file:line and field). The file format is in docs/procedure.md.
//
// Flags are spelled --think, --json, --param and so on, before or after
// FILE; the single-dash spellings of earlier versions (-think 0) still work.
// hoist-procedure --completion bash (or zsh, fish, powershell) prints a
// shell completion script; run hoist-procedure --help for every flag.
package main
