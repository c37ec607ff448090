// Drives an MCP server with the TypeScript SDK client and prints what it saw
// as JSON: the tools, call results, progress notifications and the
// server-to-client requests it answered.
// usage: node client.mjs PEERS_NODE_MODULES http URL [TOKEN]
//        node client.mjs PEERS_NODE_MODULES stdio COMMAND [ARGS...]
import { createRequire } from 'node:module';
const [peers, mode, ...rest] = process.argv.slice(2);
const require = createRequire(peers + '/');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { CreateMessageRequestSchema, ElicitRequestSchema } = require('@modelcontextprotocol/sdk/types.js');

const out = { progress: [], calls: {}, sampling: 0 };
const client = new Client({ name: 'hoist-test', version: '0' }, { capabilities: { sampling: {}, elicitation: {} } });
client.setRequestHandler(CreateMessageRequestSchema, async () => {
  out.sampling++;
  return { model: 'test-model', role: 'assistant', content: { type: 'text', text: 'sampled by the test' } };
});
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));
let transport;
if (mode === 'http') {
  const [url, token] = rest;
  const opts = token ? { requestInit: { headers: { Authorization: 'Bearer ' + token } } } : {};
  transport = new StreamableHTTPClientTransport(new URL(url), opts);
} else {
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: process.env, stderr: 'inherit' });
}
await client.connect(transport);
out.server = client.getServerVersion()?.name;
const tools = await client.listTools();
out.tools = tools.tools.map(t => t.name).sort();
const call = async (name, args, extra) => {
  try {
    const r = await client.callTool({ name, arguments: args }, undefined, extra);
    out.calls[name] = r;
  } catch (e) {
    out.calls[name] = { error: String(e.message || e) };
  }
};
if (out.tools.includes('echo')) {
  await call('echo', { message: 'hello over http' });
  await call('trigger-long-running-operation', { duration: 1, steps: 3 }, {
    onprogress: p => out.progress.push({ progress: p.progress, total: p.total }),
    resetTimeoutOnProgress: true,
  });
  if (out.tools.includes('trigger-sampling-request')) {
    await call('trigger-sampling-request', { prompt: 'hi', maxTokens: 5 });
  }
} else {
  await call('lookup', { text: 'hello over http' });
}
if (transport.terminateSession) await transport.terminateSession().catch(() => {});
await client.close();
console.log(JSON.stringify(out));
