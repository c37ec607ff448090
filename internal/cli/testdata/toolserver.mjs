// A small MCP server on stdio, made with the TypeScript SDK's Server, whose
// get_weather tool has the description given: a server whose tools change
// between sessions, for hoist tools.
// usage: node toolserver.mjs PEERS_NODE_MODULES DESCRIPTION
import { createRequire } from 'node:module';
const [peers, description] = process.argv.slice(2);
const require = createRequire(peers + '/');
const { Server } = require('@modelcontextprotocol/sdk/server/index.js');
const { StdioServerTransport } = require('@modelcontextprotocol/sdk/server/stdio.js');
const { ListToolsRequestSchema, CallToolRequestSchema } = require('@modelcontextprotocol/sdk/types.js');

const server = new Server({ name: 'weather', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: 'get_weather', description,
      inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      annotations: { readOnlyHint: true },
    },
    {
      name: 'set_alarm', description: 'Sets an alarm.',
      inputSchema: { type: 'object', properties: { at: { type: 'string' } } },
      annotations: { readOnlyHint: false },
    },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (req) => ({
  content: [{ type: 'text', text: 'sunny in ' + req.params.arguments?.city }],
}));
await server.connect(new StdioServerTransport());
