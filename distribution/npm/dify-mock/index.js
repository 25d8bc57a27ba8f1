'use strict';
// @difyops/dify-mock: finds the prebuilt dify-mock binary that npm installed
// from the platform package matching this machine (one optional dependency
// per OS/CPU, as esbuild does: nothing is downloaded at install time), and
// starts it for a test runner's global setup.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

// Node's platform/arch → the platform package's suffix. build.js writes one
// package for each entry that the release builds.
const PLATFORMS = {
  'linux x64': 'linux-x64',
  'linux arm64': 'linux-arm64',
  'linux arm': 'linux-arm',
  'linux ia32': 'linux-ia32',
  'darwin x64': 'darwin-x64',
  'darwin arm64': 'darwin-arm64',
  'win32 x64': 'win32-x64',
  'win32 arm64': 'win32-arm64',
  'win32 ia32': 'win32-ia32',
  'freebsd x64': 'freebsd-x64',
  'freebsd arm64': 'freebsd-arm64',
};

/**
 * Absolute path of the dify-mock binary for this machine.
 * DIFY_MOCK_BINARY_PATH overrides it (a binary built from source, say).
 */
function binaryPath() {
  const override = process.env.DIFY_MOCK_BINARY_PATH;
  if (override) return override;
  const suffix = PLATFORMS[`${process.platform} ${process.arch}`];
  if (!suffix) {
    throw new Error(`dify-mock: no prebuilt binary for ${process.platform}/${process.arch}; ` +
      'build one with `go build ./mockserver/cmd/dify-mock` and set DIFY_MOCK_BINARY_PATH');
  }
  const pkg = `@difyops/dify-mock-${suffix}`;
  let dir;
  try {
    dir = path.dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    throw new Error(`dify-mock: the platform package ${pkg} is not installed. It is an optional ` +
      'dependency of @difyops/dify-mock: reinstall without --no-optional / --omit=optional, and ' +
      'make sure the lock file was not written on another platform only');
  }
  const exe = path.join(dir, 'bin', process.platform === 'win32' ? 'dify-mock.exe' : 'dify-mock');
  if (!fs.existsSync(exe)) throw new Error(`dify-mock: ${exe} is missing from ${pkg}`);
  return exe;
}

// The serve banner line that carries the address: "  API base URL  http://127.0.0.1:PORT/v1".
const BASE_URL_LINE = /API base URL\s+(http:\/\/\S+\/v1)/;

// App names as `serve --app` takes them (docs/mock/apps.md).
const APP_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/**
 * The apps of options.apps in order: name, absolute path and the keys that
 * reach it. Keys are the ones given plus the folder's keys.txt (one a line,
 * blank and # lines skipped), as serve reads them; an app with neither is
 * reached by `app-NAME` (serve's default with several apps; with one app
 * any `app-…` key works, that one too).
 */
function appList(apps) {
  if (apps === undefined) return [];
  if (apps === null || typeof apps !== 'object' || Array.isArray(apps)) {
    throw new Error('dify-mock: apps must be an object: { NAME: PATH or { path, keys } }');
  }
  return Object.entries(apps).map(([name, app]) => {
    if (!APP_NAME.test(name)) {
      throw new Error(`dify-mock: app name ${JSON.stringify(name)}: want 1 to 63 lower-case letters, digits, '-' or '_', starting with a letter or digit`);
    }
    const spec = typeof app === 'string' ? { path: app } : app || {};
    if (typeof spec.path !== 'string' || spec.path === '') {
      throw new Error(`dify-mock: app ${name}: a path is required (an app folder or a Dify DSL file)`);
    }
    const given = spec.keys || [];
    for (const key of given) {
      // Keys travel in DIFY_MOCK_APP_KEYS, comma-separated; the message never shows one.
      if (typeof key !== 'string' || key === '' || key.includes(',')) {
        throw new Error(`dify-mock: app ${name}: each key must be a non-empty string without a comma`);
      }
    }
    const abs = path.resolve(spec.path);
    const keys = [...given, ...keysFile(abs)];
    return { name, path: abs, given, keys: keys.length ? keys : [`app-${name}`] };
  });
}

// keysFile reads the keys.txt of an app folder ([] for a DSL file or a
// folder without one).
function keysFile(dir) {
  let text;
  try {
    text = fs.readFileSync(path.join(dir, 'keys.txt'), 'utf8');
  } catch {
    return [];
  }
  return text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
}

/**
 * Starts `dify-mock serve` on a loopback port and resolves once it listens.
 * @param {import('./index').DifyMockOptions} [options]
 * @returns {Promise<import('./index').DifyMock>}
 */
function startDifyMock(options = {}) {
  const {
    speed, cassettes, fault, port = 0, host = '127.0.0.1', apiKeys, apps, args = [], env,
    startTimeoutMs = 15000, stdio = 'ignore',
  } = options;
  // --exit-with-parent: the server ends with this process however it ends
  // (a runner killed by SIGTERM or SIGKILL on a CI timeout runs no exit hook).
  const argv = ['serve', '--addr', `${host.includes(':') ? `[${host}]` : host}:${port}`, '--exit-with-parent'];
  if (speed !== undefined) argv.push('--speed', String(speed));
  if (cassettes) argv.push('--cassettes', path.resolve(cassettes));
  if (fault) argv.push('--fault', fault);
  for (const key of apiKeys || []) argv.push('--api-key', key);
  let served;
  try {
    served = appList(apps);
  } catch (err) {
    return Promise.reject(err);
  }
  const appEnv = {};
  for (const a of served) argv.push('--app', `${a.name}=${a.path}`);
  // The keys go in the environment, not in argv, where any user of the
  // machine could read them in the process list.
  const pairs = served.flatMap((a) => a.given.map((k) => `${a.name}=${k}`));
  if (pairs.length) appEnv.DIFY_MOCK_APP_KEYS = pairs.join(',');
  argv.push(...args);

  let exe;
  try {
    exe = binaryPath();
  } catch (err) {
    return Promise.reject(err);
  }
  const child = spawn(exe, argv, {
    // DIFY_MOCK_* variables of the caller's environment apply to what the
    // options leave unset (flags win over them, as on the command line).
    env: { ...process.env, ...env, ...appEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
    windowsHide: true,
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  registerChild(child);

  return new Promise((resolve, reject) => {
    let out = '';
    let errOut = '';
    let settled = false;
    const fail = (msg) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`dify-mock: ${msg}${errOut ? `\n${errOut.trim()}` : ''}`));
    };
    const timer = setTimeout(() => fail(`did not start within ${startTimeoutMs} ms`), startTimeoutMs);
    child.on('error', (err) => fail(`cannot run ${exe}: ${err.message}`));
    child.once('exit', (code, signal) => fail(`exited with ${signal || `code ${code}`} before it was ready`));
    child.stderr.on('data', (chunk) => {
      if (stdio === 'inherit') process.stderr.write(chunk);
      if (errOut.length < 65536) errOut += chunk;
    });
    child.stdout.on('data', (chunk) => {
      if (stdio === 'inherit') process.stdout.write(chunk);
      if (settled) return;
      out += chunk;
      const m = BASE_URL_LINE.exec(out);
      if (!m) return;
      settled = true;
      clearTimeout(timer);
      const baseUrl = m[1];
      const url = baseUrl.slice(0, -'/v1'.length);
      resolve({
        baseUrl,
        url,
        port: Number(new URL(url).port),
        apps: Object.fromEntries(served.map((a, i) => [a.name, { name: a.name, keys: a.keys, key: a.keys[0], default: i === 0 }])),
        process: child,
        stop: () => {
          if (child.exitCode === null && child.signalCode === null) {
            // SIGTERM: in-flight streams get their final frame, then it exits.
            child.kill('SIGTERM');
            const force = setTimeout(() => child.kill('SIGKILL'), 10000);
            exited.then(() => clearTimeout(force));
          }
          return exited.then(() => undefined);
        },
      });
    });
  });
}

// Children still running when Node exits normally are killed at once, so a
// test runner that forgets stop() leaves no server behind; when Node is
// killed instead, --exit-with-parent ends them.
const children = new Set();
let exitHook = false;
function registerChild(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const c of children) c.kill('SIGKILL');
    });
  }
}

module.exports = { startDifyMock, binaryPath };
