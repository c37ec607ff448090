// Drives an MCP server over stdio with the TypeScript SDK's Client and
// StdioClientTransport, as a real host does, and prints what it saw as one
// JSON document on stdout: each step's result or error, the progress
// notifications, other notifications, the requests the server sent, and every
// message on the wire in each direction, in order. (Across directions the
// order is not the wire's to keep: the client sends without waiting.)
//
// usage: node everything.cjs NODE_MODULES COMMAND [ARGS...]
//
// NODE_MODULES is where scripts/peers.sh installed the npm peers. The steps
// are written for @modelcontextprotocol/server-everything; the Go test
// (everything_test.go) runs this once against the server directly and once
// through hoist-mcp and compares the two transcripts.
'use strict';

const path = require('node:path');
const { createRequire } = require('node:module');

const [nodeModules, command, ...args] = process.argv.slice(2);
if (!nodeModules || !command) {
  process.stderr.write('usage: node everything.cjs NODE_MODULES COMMAND [ARGS...]\n');
  process.exit(2);
}
const peer = createRequire(path.join(nodeModules, '..', 'package.json'));
const { Client } = peer('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = peer('@modelcontextprotocol/sdk/client/stdio.js');
const { CreateMessageRequestSchema } = peer('@modelcontextprotocol/sdk/types.js');

// A copy, so that nothing the SDK does later changes what was recorded.
const copy = (v) => (v === undefined ? null : JSON.parse(JSON.stringify(v)));

async function main() {
  const transcript = {
    server: null,
    steps: [],
    progress: [],
    notifications: [],
    serverRequests: [],
    sent: [],
    received: [],
    stderr: '',
    clientPid: process.pid,
    exit: null,
  };

  // The SDK hands the child only a few variables (HOME, PATH, …); GORACE
  // must reach a race-enabled hoist-mcp, or it sleeps a second at exit.
  const env = process.env.GORACE ? { GORACE: process.env.GORACE } : undefined;
  const transport = new StdioClientTransport({ command, args, env, stderr: 'pipe' });
  transport.stderr.on('data', (b) => { transcript.stderr += b.toString('utf8'); });

  // Tap the transport: every message the client sends, and every message
  // it receives, each in order.
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    transcript.sent.push(copy(message));
    return send(message, options);
  };
  let onmessage;
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => onmessage,
    set: (h) => {
      onmessage = h && ((message, extra) => {
        transcript.received.push(copy(message));
        h(message, extra);
      });
    },
  });

  const client = new Client(
    { name: 'hoist-e2e', version: '1.0.0' },
    { capabilities: { sampling: {} } },
  );
  client.fallbackNotificationHandler = async (n) => { transcript.notifications.push(copy(n)); };
  // The sampling request server-everything sends back through the wire:
  // a request from the server, answered by the client.
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    transcript.serverRequests.push(copy(req));
    const prompt = req.params.messages.map((m) => m.content.text).join(' ');
    return {
      model: 'hoist-e2e-stub',
      role: 'assistant',
      content: { type: 'text', text: `stub answer to: ${prompt}` },
      stopReason: 'endTurn',
    };
  });

  const step = async (name, request, run) => {
    const s = { name, request: copy(request) };
    try {
      s.result = copy(await run());
    } catch (err) {
      s.error = { code: err.code ?? null, message: String(err.message) };
    }
    transcript.steps.push(s);
    return s;
  };

  await client.connect(transport);
  // How the server (or the proxy in front of it) ended, once the client
  // closed its stdin. _process is the transport's child; the SDK does not
  // report its status otherwise.
  const exited = new Promise((resolve) => {
    transport._process.once('exit', (code, signal) => resolve({ code, signal }));
  });
  transcript.server = {
    version: copy(client.getServerVersion()),
    capabilities: copy(client.getServerCapabilities()),
    instructions: client.getInstructions() ?? null,
  };

  await step('tools/list', {}, () => client.listTools());

  const call = (name, params, options) =>
    step(`tools/call ${params.name}: ${name}`, params, () => client.callTool(params, undefined, options));

  await call('plain text', { name: 'echo', arguments: { message: 'hello through hoist' } });
  await call('unicode, escapes and U+2028', {
    name: 'echo',
    arguments: { message: 'ünïcödé ✓ 😀 "quoted" back\\slash tab\t newline\n \u2028 \u2029 end' },
  });
  // Longer than a 64 KiB scanner line: the message crosses the proxy whole.
  const big = 'x'.repeat(300 << 10);
  await call('a 600 KiB message', { name: 'echo', arguments: { message: 'y'.repeat(600 << 10) } });
  // A shorter one right after: the proxy assembles it where it assembled
  // the longer one.
  await call('a 300 KiB message', { name: 'echo', arguments: { message: big } });
  await call('numbers', { name: 'get-sum', arguments: { a: 2, b: 40.5 } });
  await call('structured content', { name: 'get-structured-content', arguments: { location: 'Chicago' } });
  await call('an image', { name: 'get-tiny-image', arguments: {} });
  await call('progress notifications', {
    name: 'trigger-long-running-operation',
    arguments: { duration: 0.2, steps: 4 },
  }, { onprogress: (p) => transcript.progress.push(copy(p)) });
  // (The SDK runs notification handlers a microtask late but settles
  // responses at once, so a progress notification that arrives in the same
  // read as its response never reaches onprogress: transcript.progress may
  // miss the last one, with or without a proxy. transcript.received has
  // them all.)
  await call('a sampling request from the server', {
    name: 'trigger-sampling-request',
    arguments: { prompt: 'name a colour', maxTokens: 20 },
  });
  await call('an unknown tool', { name: 'no-such-tool', arguments: {} });
  await call('invalid arguments', { name: 'get-sum', arguments: { a: 'two' } });

  await step('resources/read dynamic text', { uri: 'demo://resource/dynamic/text/1' },
    () => client.readResource({ uri: 'demo://resource/dynamic/text/1' }));
  await step('prompts/list', {}, () => client.listPrompts());
  await step('ping', {}, () => client.ping());

  await client.close();
  transcript.exit = await exited;

  process.stdout.write(JSON.stringify(transcript, null, 1) + '\n');
}

main().catch((err) => {
  process.stderr.write(`everything.cjs: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
