// The MCP client the conformance suite's client scenarios test: the
// TypeScript SDK's Client, connected to the scenario's server either
// directly (its Streamable HTTP transport) or through hoist-mcp --upstream
// (its stdio transport, hoist-mcp being the child). The suite appends the
// server's URL to the command and names the scenario in
// MCP_CONFORMANCE_SCENARIO.
//
// usage: node conformance-client.cjs NODE_MODULES direct URL
//        node conformance-client.cjs NODE_MODULES proxy HOIST_MCP [ARGS...] URL
//
// What the client does is what any host does: it connects, lists the
// tools, calls each with arguments its input schema asks for, and answers
// an elicitation by accepting the defaults the requested schema gives.
'use strict';

const path = require('node:path');
const { createRequire } = require('node:module');

const [nodeModules, mode, ...rest] = process.argv.slice(2);
const url = rest[rest.length - 1];
if (!nodeModules || !url || (mode !== 'direct' && mode !== 'proxy') || (mode === 'proxy' && rest.length < 2)) {
  process.stderr.write('usage: node conformance-client.cjs NODE_MODULES direct|proxy [HOIST_MCP ARGS...] URL\n');
  process.exit(2);
}
const peer = createRequire(path.join(nodeModules, '..', 'package.json'));
const { Client } = peer('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = peer('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = peer('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { ElicitRequestSchema } = peer('@modelcontextprotocol/sdk/types.js');

// argsFor makes arguments that satisfy a tool's input schema: a number for
// each number, a string for each string.
function argsFor(schema) {
  const args = {};
  for (const [name, p] of Object.entries((schema && schema.properties) || {})) {
    switch (p.type) {
      case 'number':
      case 'integer':
        args[name] = name.length + 1;
        break;
      case 'boolean':
        args[name] = true;
        break;
      default:
        args[name] = name;
    }
  }
  return args;
}

async function main() {
  let transport;
  if (mode === 'direct') {
    transport = new StreamableHTTPClientTransport(new URL(url));
  } else {
    const [command, ...args] = rest.slice(0, -1);
    // The SDK hands the child only a few variables; GORACE must reach a
    // race-enabled hoist-mcp, or it sleeps a second at exit.
    const env = process.env.GORACE ? { GORACE: process.env.GORACE } : undefined;
    transport = new StdioClientTransport({ command, args: [...args, '--upstream', url], env, stderr: 'inherit' });
  }
  const client = new Client(
    { name: 'hoist-conformance-client', version: '1.0.0' },
    { capabilities: { elicitation: {} } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    const content = {};
    const props = (req.params.requestedSchema && req.params.requestedSchema.properties) || {};
    for (const [name, p] of Object.entries(props)) {
      if (p.default !== undefined) content[name] = p.default;
    }
    return { action: 'accept', content };
  });
  await client.connect(transport);
  const { tools } = await client.listTools();
  for (const tool of tools) {
    try {
      await client.callTool({ name: tool.name, arguments: argsFor(tool.inputSchema) });
    } catch (err) {
      process.stderr.write(`conformance-client: ${tool.name}: ${err.message}\n`);
    }
  }
  await client.close();
}

main().catch((err) => {
  process.stderr.write(`conformance-client: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
