// Package e2e runs hoist's programs against real MCP programs from the npm
// registry (peers/package.json, installed into peers/node_modules by
// scripts/peers.sh): the TypeScript SDK's client in front of
// @modelcontextprotocol/server-everything, once directly and once through
// hoist-mcp --record, and the inspector CLI the same way (issue 2, point 4);
// the conformance suite (@modelcontextprotocol/conformance) through
// hoist-mcp, its client scenarios through --upstream and its server
// scenarios through --listen, each beside the same run without the proxy;
// and the official Go SDK (a test-only module) as a client and a server of
// the stateless era, 2026-07-28, through stdio, --listen and --upstream,
// recorded and with a flow served (issue 14).
//
// The tests skip when the peers are not installed, and fail instead when
// HOIST_REQUIRE_PEERS is set, as the README's test command (scripts/test.sh)
// sets it.
package e2e
