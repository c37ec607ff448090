// Drives an MCP server over stdio with the TypeScript SDK client: lists its
// tools, makes the calls given as JSON, one after another, and prints what
// it saw as JSON: the server's name and version, its tools and each call's
// result (or the error the client threw).
// usage: node sdkclient.mjs PEERS_NODE_MODULES CALLS_JSON COMMAND [ARGS...]
//   CALLS_JSON: [{"name": "tool", "arguments": {...}}, ...]
import { createRequire } from 'node:module';
const [peers, callsJSON, command, ...args] = process.argv.slice(2);
const require = createRequire(peers + '/');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const client = new Client({ name: 'hoist-replay-test', version: '0' });
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' });
await client.connect(transport);
const out = { server: client.getServerVersion(), tools: (await client.listTools()).tools, calls: [] };
for (const c of JSON.parse(callsJSON)) {
  try {
    out.calls.push(await client.callTool(c));
  } catch (e) {
    out.calls.push({ thrown: String(e.message || e) });
  }
}
await client.close();
console.log(JSON.stringify(out));
