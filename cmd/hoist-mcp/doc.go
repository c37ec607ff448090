// Command hoist-mcp is a recording MCP proxy that can also act on what it
// sees. It starts an MCP server as a child process (or speaks to one over
// Streamable HTTP with --upstream), serves the host over stdio (or over
// Streamable HTTP with --listen), forwards every line byte for byte, and with
// --record writes each line to a session log:
//
//	hoist-mcp --record ~/.hoist/logs --domain orders -- npx -y some-mcp-server
//
// The log is DIR/<session>.jsonl: a header line, then one line per wire line
// with its time ({"t_ms":12,"from":"client","message":{…}}), the message
// exactly as sent, or "raw" text for a line that is not JSON.
//
// With --flow FILE it serves a flow learned by hoist learn: after each of the
// agent's calls it makes the read-only lookups the flow predicts and appends
// their results to the agent's answer, logging each decision to
// <session>.flow.jsonl.
//
// With --guards and --domain retail or airline it checks each of the
// agent's writes against that domain's policy before the server sees it: a
// write an enforced rule refuses never reaches the server, and the agent
// gets an error result naming the rule; every write's verdicts go to
// <session>.guards.jsonl. --commit adds hoist_commit to the server's tools,
// which makes several confirmed writes in order, each checked first, and
// stops at the first refused or failed (docs/guards.md).
//
// --limit TOOL=N/PERIOD and --max-calls N cap the calls that reach the
// server (docs/limits.md); --pin-tools FILE holds each tools/list answer to
// the definitions hoist tools pin wrote, and warns, hides a changed tool or
// holds the session (docs/tools.md). Every approval (the judge's yes, a
// console's verdict) is bound to the exact call it approved
// (docs/approvals.md).
//
// Exit status: the server's (128+n when signal n ended it); 125 when the
// proxy itself failed (a log it could not create, a server it could not
// start, a --flow file it could not read or serve), leaving no log; 2 for
// usage errors.
//
// Run hoist-mcp --help for every option; hoist-mcp --completion bash (or
// zsh, fish, powershell) prints a shell completion script.
package main
