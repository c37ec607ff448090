// Command hoist-mcp-demo is a tiny MCP server, on stdio or (--http ADDR)
// Streamable HTTP, for trying hoist-mcp. It speaks every MCP revision the
// proxy does: initialize from 2024-11-05 to 2025-11-25, and 2026-07-28's
// server/discover and per-request versions.
//
// By default it serves the echo world: two tools that store nothing and
// answer with their arguments, lookup, annotated read-only, and update,
// annotated as not read-only. "fail": true makes either return an error
// result, and "delay_ms": n makes it wait before answering; calls run
// concurrently.
//
// --world retail serves a tiny shop instead, with five of τ²-bench retail's
// tools (find_user_id_by_email, get_user_details and get_order_details, which
// read, and cancel_pending_order and modify_pending_order_payment, which
// write) and canned data: cN@example.com is user_N (N from 1 to 20), whose
// orders #WNa and #WNb are pending, and who has a card or a gift card, a
// PayPal account, and some a small gift card besides. It answers as
// τ²-bench does, and a cancelled order stays cancelled until the process
// exits. --calls-log FILE journals every call it serves. hoist-procedure
// runs scripted customers against it.
//
// --world tau2-retail serves τ²-bench's own retail domain: its sixteen tools
// over its database (--db FILE, by default the copy the program carries,
// compressed, so it runs anywhere after go install),
// with τ²-bench's semantics and answers, each session starting from the
// database as loaded, so a recorded τ²-bench agent's calls get the answers
// they got; hoist-procedure replay plays such agents back.
//
// --replay LOG... serves recorded sessions instead of a world: the session
// logs hoist-mcp --record wrote. It answers initialize and tools/list as
// recorded and each call with the recorded answer of the same tool and
// arguments (equal as JSON values, else loosely equal), in the order they
// were recorded; a call it has no answer for gets a tool error naming the
// nearest recorded call (docs/recordings.md). An agent's tests then run
// offline and answer the same every time.
//
// Run hoist-mcp-demo --help for its flags; hoist-mcp-demo --completion bash
// (or zsh, fish, powershell) prints a shell completion script.
package main
