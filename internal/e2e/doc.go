// Package e2e runs hoist's programs against real MCP programs from the npm
// registry (peers/package.json, installed into peers/node_modules by
// scripts/peers.sh): the TypeScript SDK's client in front of
// @modelcontextprotocol/server-everything, once directly and once through
// hoist-mcp --record, and the inspector CLI the same way (issue 2, point 4).
//
// The tests skip when the peers are not installed, and fail instead when
// HOIST_REQUIRE_PEERS is set, as the README's test command (scripts/test.sh)
// sets it.
package e2e
