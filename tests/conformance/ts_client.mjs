// The official MCP TypeScript SDK's client (the one Claude Code and the MCP Inspector use)
// driven against a gsmcpd: `node ts_client.mjs SDK_DIR URL`. Every scenario runs and its
// outcome is recorded, never asserted here: the JSON printed on stdout is for
// tests/test_ts_client.py to judge. Whatever the SDK reports through onerror, and every
// HTTP exchange it makes (method, status, the MCP headers it sent), is recorded too.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [sdkDir, serverUrl] = process.argv.slice(2);
const esm = (p) => import(pathToFileURL(path.join(sdkDir, 'dist', 'esm', p)).href);
const { Client } = await esm('client/index.js');
const { StreamableHTTPClientTransport } = await esm('client/streamableHttp.js');

const url = new URL(serverUrl);
const out = {};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const failure = (e) => ({ threw: e?.constructor?.name, code: e?.code, message: String(e?.message ?? e) });
const text = (result) => (result.content ?? []).map((c) => c.text ?? '').join('');

function open(name, { sessionId, protocolVersion } = {}) {
  const exchanges = [];
  const errors = [];
  const fetchLogged = async (input, init = {}) => {
    const headers = new Headers(init.headers);
    let body = init.body;
    if (protocolVersion && typeof body === 'string' && body.includes('"method":"initialize"')) {
      // The SDK always offers its latest revision; an older client is simulated by rewriting it.
      const message = JSON.parse(body);
      message.params.protocolVersion = protocolVersion;
      body = JSON.stringify(message);
      init = { ...init, body };
    }
    const exchange = {
      method: init.method,
      rpc: typeof body === 'string' ? (JSON.parse(body).method ?? 'response') : null,
      sessionId: headers.get('mcp-session-id'),
      protocolVersion: headers.get('mcp-protocol-version'),
    };
    exchanges.push(exchange);
    const response = await fetch(input, init);
    exchange.status = response.status;
    exchange.contentType = response.headers.get('content-type');
    return response;
  };
  const client = new Client({ name: 'gsmcpd-ts-interop', version: '0' });
  const transport = new StreamableHTTPClientTransport(url, { fetch: fetchLogged, sessionId });
  transport.onerror = (e) => errors.push(String(e?.message ?? e));
  const pings = [];
  return { client, transport, exchanges, errors, pings, name };
}

async function scenario(name, body) {
  try {
    out[name] = await body();
  } catch (e) {
    out[name] = { unexpected: failure(e), stack: String(e?.stack ?? '') };
  }
}

async function call(c, name, args, options) {
  try {
    const result = await c.client.callTool({ name, arguments: args }, undefined, options);
    return { isError: result.isError ?? false, text: text(result), structured: result.structuredContent ?? null };
  } catch (e) {
    return failure(e);
  }
}

await scenario('main', async () => {
  const c = open('main');
  await c.client.connect(c.transport);
  const r = {
    protocolVersion: c.transport.protocolVersion,
    server: c.client.getServerVersion(),
    capabilities: c.client.getServerCapabilities(),
  };
  const tools = await c.client.listTools();
  r.tools = tools.tools.map((t) => t.name).sort();
  r.answer = await call(c, 'execute_code', { code: 'x = 6\nx * 7' });
  r.remembered = await call(c, 'execute_code', { code: 'x + 1' });
  r.raised = await call(c, 'execute_code', { code: '1/0' });
  r.badArguments = await call(c, 'execute_code', { source: '1' });
  r.emptySelector = await call(c, 'find_implementors', { selector: '' });
  r.unknownTool = await call(c, 'no_such_tool', {});
  r.listClasses = await call(c, 'list_classes', { dictionaryName: 'shop.models' });
  r.notFound = await call(c, 'describe_class', { className: 'NoSuchClass' });
  r.ping = await c.client.ping();
  try { await c.client.listResources(); r.listResources = 'answered'; } catch (e) { r.listResources = failure(e); }

  // Progress: every notification reaches onprogress, then the result; from execute_code's
  // progress() and from run_test_class (one per test).
  const codeProgress = [];
  r.progressResult = await call(c, 'execute_code',
    { code: 'for i in range(1, 6):\n    progress(i, 5, "step %d" % i)\n"done"' },
    { onprogress: (p) => codeProgress.push(p), resetTimeoutOnProgress: true, timeout: 20000 });
  r.codeProgress = codeProgress;
  const testProgress = [];
  r.testRun = await call(c, 'run_test_class', { className: 'shop.test_models.CartTest' },
    { onprogress: (p) => testProgress.push(p) });
  r.testProgress = testProgress;

  // Cancellation: the SDK rejects at once and POSTs notifications/cancelled; the call's
  // code must not run on, and the session must answer the next call.
  const controller = new AbortController();
  setTimeout(() => controller.abort('user cancelled'), 250);
  r.cancelled = await call(c, 'execute_code',
    { code: 'import time\nfor _ in range(100):\n    time.sleep(0.1)\nfinished = True' },
    { signal: controller.signal });
  // The same through the SDK's own request timeout, on a call answering over SSE.
  r.timedOut = await call(c, 'execute_code',
    { code: 'import time\nprogress(1)\nfor _ in range(100):\n    time.sleep(0.1)\nfinished = True' },
    { timeout: 400, onprogress: () => {} });
  await sleep(300);
  r.afterCancel = await call(c, 'execute_code', { code: 'globals().get("finished")' });

  // The server's liveness probe comes down the GET stream the SDK opened; the SDK answers it.
  await sleep(Number(process.env.TS_CLIENT_IDLE_MS ?? 0));
  r.afterIdle = await call(c, 'execute_code', { code: '"still here"' });

  // DELETE, then what a call on the ended session gets, then a transport resuming the
  // old session id (404).
  const oldSession = c.transport.sessionId;
  r.sessionIdBefore = oldSession;
  await c.transport.terminateSession();
  r.sessionIdAfterDelete = c.transport.sessionId ?? null;
  r.afterDelete = await call(c, 'execute_code', { code: '1' });
  await c.client.close();
  const stale = open('stale', { sessionId: oldSession });
  await stale.client.connect(stale.transport);
  r.staleSession = await call(stale, 'execute_code', { code: '1' });
  await stale.client.close();
  r.exchanges = c.exchanges;
  r.staleExchanges = stale.exchanges;
  r.errors = c.errors;
  return r;
});

await scenario('older', async () => {
  const c = open('older', { protocolVersion: '2025-06-18' });
  await c.client.connect(c.transport);
  const r = { protocolVersion: c.transport.protocolVersion };
  r.answer = await call(c, 'execute_code', { code: '2 + 3' });
  await c.transport.terminateSession();
  await c.client.close();
  r.exchanges = c.exchanges;
  r.errors = c.errors;
  return r;
});

process.stdout.write(JSON.stringify(out));
// Nothing may keep the process alive (a reconnect timer, a stream): the result is out.
process.exit(0);
