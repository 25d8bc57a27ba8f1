// The mock never outlives its owner (runs inside the temporary project of
// scripts/npm-test.sh). Each owner — a Node process that called
// startDifyMock, `npx dify-mock`, the bin shim itself — is killed the way a
// CI timeout, a cancel or a script's `kill $!` kills it, and the port must
// close within a few seconds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

// Generous for a loaded machine: the mechanisms take 5-200 ms.
const CLOSE_WITHIN_MS = 2000;

function portIsClosed(port) {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => { s.destroy(); resolve(false); });
    s.once('error', () => resolve(true));
  });
}

async function closesWithin(port, ms) {
  const deadline = performance.now() + ms;
  while (performance.now() < deadline) {
    if (await portIsClosed(port)) return performance.now();
    await new Promise((r) => setTimeout(r, 50));
  }
  return 0;
}

// start runs an owner process and resolves with it and the port it reports,
// read from its stdout with `pattern`.
function start(cmd, args, pattern) {
  const owner = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => { owner.kill('SIGKILL'); reject(new Error(`no port from ${cmd}: ${out}`)); }, 20000);
    owner.stdout.on('data', (chunk) => {
      out += chunk;
      const m = pattern.exec(out);
      if (m) {
        clearTimeout(timer);
        owner.stdout.on('data', () => {}); // keep draining the mock's output
        resolve({ owner, port: Number(m[1]) });
      }
    });
    owner.once('exit', (code, sig) => { clearTimeout(timer); reject(new Error(`${cmd} exited ${sig || code}: ${out}`)); });
  });
}

async function assertEndsWithOwner(owner, port, signal) {
  assert.equal(await portIsClosed(port), false, 'the mock is not serving');
  const killed = performance.now();
  owner.kill(signal);
  const closed = await closesWithin(port, CLOSE_WITHIN_MS);
  assert.ok(closed, `the mock still listens ${CLOSE_WITHIN_MS} ms after its owner got ${signal}`);
  console.log(`# port closed ${(closed - killed).toFixed(0)} ms after the owner got ${signal}`);
}

const BANNER = /API base URL\s+http:\/\/127\.0\.0\.1:(\d+)\/v1/;

for (const signal of ['SIGTERM', 'SIGKILL']) {
  test(`a Node process that started the mock and is killed with ${signal} takes the mock with it`, async () => {
    // No stop(), no exit hook runs: what a runner killed on a CI timeout leaves.
    const script = "require('@difyops/dify-mock').startDifyMock({ speed: 0 })" +
      ".then((m) => { console.log('port ' + m.port); setInterval(() => {}, 1000); });";
    const { owner, port } = await start(process.execPath, ['-e', script], /port (\d+)/);
    await assertEndsWithOwner(owner, port, signal);
  });

  test(`npx dify-mock killed with ${signal} (a script's kill $!) takes the mock with it`, async () => {
    const { owner, port } = await start('npx', ['--no-install', 'dify-mock', '--addr', '127.0.0.1:0', '--speed', '0'], BANNER);
    await assertEndsWithOwner(owner, port, signal);
  });
}

// The shim itself: signals it can catch are passed on; SIGKILL it cannot,
// and then the binary notices its parent is gone.
const shim = path.resolve('node_modules', '@difyops', 'dify-mock', 'bin', 'dify-mock.js');
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGKILL']) {
  test(`the shim killed with ${signal} takes the mock with it`, async () => {
    const { owner, port } = await start(process.execPath, [shim, '--addr', '127.0.0.1:0', '--speed', '0'], BANNER);
    await assertEndsWithOwner(owner, port, signal);
  });
}
