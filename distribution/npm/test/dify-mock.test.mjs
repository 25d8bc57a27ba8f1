// Runs inside a temporary project that installed @difyops/dify-mock from its
// tarballs (scripts/npm-test.sh): the JS API starts the installed binary and a
// chat turn streams through it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import * as api from '@difyops/dify-mock';
import { startDifyMock, binaryPath } from '@difyops/dify-mock';

const headers = { Authorization: 'Bearer app-npm-test', 'Content-Type': 'application/json' };

// readFrames parses an SSE body into its `data:` payloads, noting when each
// arrived.
async function readFrames(body) {
  const frames = [];
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of body) {
    buf += decoder.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const raw = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = raw.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      if (data) frames.push({ at: performance.now(), event: JSON.parse(data) });
    }
  }
  return frames;
}

function portIsClosed(port) {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => { s.destroy(); resolve(false); });
    s.once('error', () => resolve(true));
  });
}

test('the type declarations describe exactly what the package exports', () => {
  const require = createRequire(import.meta.url);
  const dts = fs.readFileSync(require.resolve('@difyops/dify-mock/index.d.ts'), 'utf8');
  const declared = [...dts.matchAll(/^export function (\w+)/gm)].map((m) => m[1]).sort();
  const exported = Object.keys(api).filter((k) => k !== 'default' && typeof api[k] === 'function').sort();
  assert.deepEqual(declared, exported);
  for (const field of ['baseUrl', 'url', 'port', 'apps', 'process', 'stop()']) {
    assert.ok(dts.includes(`  ${field}`), `DifyMock lacks ${field}`);
  }
  for (const option of ['speed', 'cassettes', 'fault', 'port', 'apps']) {
    assert.ok(dts.includes(`  ${option}?:`), `DifyMockOptions lacks ${option}`);
  }
});

test('binaryPath points into the platform package', () => {
  assert.match(binaryPath(), /node_modules[\\/]@difyops[\\/]dify-mock-[a-z0-9]+-[a-z0-9]+[\\/]bin[\\/]dify-mock(\.exe)?$/);
});

test('startDifyMock streams a turn at the requested speed and stop() ends the server', async () => {
  // plain-answer: 7 frames over about 2.2 s of recorded time; speed 4 plays
  // it in about 0.55 s, still spread out.
  const mock = await startDifyMock({ speed: 4 });
  try {
    assert.match(mock.baseUrl, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const info = await fetch(`${mock.baseUrl}/`);
    assert.equal(info.status, 200);

    const start = performance.now();
    const res = await fetch(`${mock.baseUrl}/chat-messages`, {
      method: 'POST', headers,
      body: JSON.stringify({ query: 'Hello', inputs: {}, user: 'npm-test', response_mode: 'streaming' }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/event-stream/);
    assert.equal(res.headers.get('x-dify-mock-cassette'), 'plain-answer');
    const frames = await readFrames(res.body);
    const events = frames.map((f) => f.event.event);
    assert.equal(events.at(-1), 'message_end', `events: ${events}`);
    assert.ok(events.includes('agent_message'), `events: ${events}`);
    const spread = frames.at(-1).at - frames[0].at;
    const total = frames.at(-1).at - start;
    assert.ok(spread > 250, `frames arrived within ${spread.toFixed(0)} ms: the recorded timing was not replayed`);
    assert.ok(total < 5000, `the turn took ${total.toFixed(0)} ms at speed 4`);

    // The mock kept the turn: the conversation is listed for that user.
    const convId = frames[0].event.conversation_id;
    const list = await (await fetch(`${mock.baseUrl}/conversations?user=npm-test`, { headers })).json();
    assert.deepEqual(list.data.map((c) => c.id), [convId]);
  } finally {
    await mock.stop();
  }
  assert.equal(mock.process.exitCode, 0, 'a clean shutdown exits 0');
  assert.ok(await portIsClosed(mock.port), 'the port still accepts connections after stop()');
});

test('options reach the server: fault and API keys', async () => {
  const mock = await startDifyMock({ speed: 0, fault: 'status:429;retry-after=7', apiKeys: ['app-npm-test'] });
  try {
    const res = await fetch(`${mock.baseUrl}/parameters`, { headers });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '7');
    const wrongKey = await fetch(`${mock.baseUrl}/parameters`, { headers: { Authorization: 'Bearer app-other' } });
    assert.equal(wrongKey.status, 401);
  } finally {
    await mock.stop();
  }
});

test('a server that cannot start rejects with its error', async () => {
  await assert.rejects(startDifyMock({ cassettes: '/nonexistent/cassettes' }), /exited with code 1[\s\S]*nonexistent/);
});

// dsl writes a minimal Dify app DSL (a legacy Agent) for the apps test.
function dsl(name, opening) {
  return `version: 0.3.0\nkind: app\napp:\n  name: ${name}\n  mode: agent-chat\nmodel_config:\n  pre_prompt: ""\n  opening_statement: ${opening}\n`;
}

test('apps: several apps in one server, each reached by its own keys', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dify-mock-apps-'));
  fs.writeFileSync(path.join(dir, 'support.yml'), dsl('Support Bot', 'Hi from support'));
  fs.mkdirSync(path.join(dir, 'sales'));
  fs.writeFileSync(path.join(dir, 'sales', 'sales.yml'), dsl('Sales Bot', 'Hi from sales'));
  fs.writeFileSync(path.join(dir, 'sales', 'keys.txt'), '# the sales app\napp-sales-file\n\n');
  const mock = await startDifyMock({
    speed: 0,
    apps: { support: { path: path.join(dir, 'support.yml'), keys: ['app-support-given'] }, sales: path.join(dir, 'sales') },
  });
  try {
    assert.deepEqual(mock.apps, {
      support: { name: 'support', keys: ['app-support-given'], key: 'app-support-given', default: true },
      sales: { name: 'sales', keys: ['app-sales-file'], key: 'app-sales-file', default: false },
    });
    // The keys were not on the command line.
    assert.ok(!mock.process.spawnargs.join(' ').includes('app-support-given'), mock.process.spawnargs.join(' '));
    const get = (p, key) => fetch(`${mock.baseUrl}${p}`, { headers: { Authorization: `Bearer ${key}` } });
    for (const [name, app, opening] of [['support', 'Support Bot', 'Hi from support'], ['sales', 'Sales Bot', 'Hi from sales']]) {
      const info = await (await get('/info', mock.apps[name].key)).json();
      assert.equal(info.name, app);
      const params = await (await get('/parameters', mock.apps[name].key)).json();
      assert.equal(params.opening_statement, opening);
    }
    // app-support is support's default key only when it is given none.
    assert.equal((await get('/info', 'app-support')).status, 401);
    // The same user in both apps is two end users: each app lists only its own conversation.
    const ids = {};
    for (const name of ['support', 'sales']) {
      const res = await fetch(`${mock.baseUrl}/chat-messages`, {
        method: 'POST', headers: { Authorization: `Bearer ${mock.apps[name].key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ query: 'Hello', inputs: {}, user: 'same-user', response_mode: 'streaming' }),
      });
      assert.equal(res.status, 200);
      ids[name] = (await readFrames(res.body))[0].event.conversation_id;
    }
    assert.notEqual(ids.support, ids.sales);
    for (const name of ['support', 'sales']) {
      const list = await (await get('/conversations?user=same-user', mock.apps[name].key)).json();
      assert.deepEqual(list.data.map((c) => c.id), [ids[name]]);
    }
    // The console's control API lists both apps, support first.
    const ctl = await (await fetch(`${mock.url}/__mock/api`)).json();
    assert.deepEqual(ctl.apps.map((a) => [a.name, a.default, a.keys]), [['support', true, 1], ['sales', false, 1]]);
  } finally {
    await mock.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('apps: a bad name or a missing path rejects before anything starts', async () => {
  await assert.rejects(startDifyMock({ apps: { Support: './x.yml' } }), /app name "Support"/);
  await assert.rejects(startDifyMock({ apps: { support: { keys: ['k'] } } }), /app support: a path is required/);
  await assert.rejects(startDifyMock({ apps: { support: { path: './x.yml', keys: ['a,b'] } } }), /without a comma/);
});
