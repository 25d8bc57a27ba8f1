#!/usr/bin/env node
'use strict';
// `npx dify-mock …`: runs the prebuilt binary with the same arguments and
// exits with its exit code. The binary never outlives this shim's owner:
//
// - every signal Node can catch is passed on, once: the binary runs in its
//   own process group, so a terminal's Ctrl-C reaches it only through here
//   (not twice, which would end it without its clean shutdown);
// - npm does not pass signals on (`kill $!` after `npx dify-mock &` signals
//   npm, which ends without telling this process), so the shim also watches
//   its owner and stops the binary with SIGTERM once the owner is gone: its
//   parent, and, when npm started it through a shell (`npx`, `npm run`), the
//   npm process above that shell, which outlives a SIGKILLed npm;
// - if the shim itself is killed (SIGKILL), the binary notices on its own:
//   DIFY_MOCK_EXIT_WITH_PARENT makes `serve` exit when its parent does.
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { binaryPath } = require('../index.js');

// Signals that are not passed on: uncatchable ones, the ones Node or the
// kernel use for their own purposes, and job control (a stopped shim with a
// running binary is worse than both stopping as the terminal intends).
const NOT_FORWARDED = new Set([
  'SIGKILL', 'SIGSTOP', 'SIGCHLD', 'SIGCLD', 'SIGPIPE', 'SIGSEGV', 'SIGBUS', 'SIGFPE', 'SIGILL',
  'SIGTRAP', 'SIGABRT', 'SIGIOT', 'SIGSYS', 'SIGPROF', 'SIGVTALRM', 'SIGTSTP', 'SIGTTIN', 'SIGTTOU',
  'SIGCONT', 'SIGURG', 'SIGPOLL', 'SIGIO', 'SIGLOST', 'SIGPWR', 'SIGINFO', 'SIGUNUSED', 'SIGSTKFLT',
  'SIGXCPU', 'SIGXFSZ',
]);
const PARENT_POLL_MS = 200;

let exe;
try {
  exe = binaryPath();
} catch (err) {
  console.error(err.message);
  process.exit(1);
}
const posix = process.platform !== 'win32';
const child = spawn(exe, process.argv.slice(2), {
  stdio: 'inherit',
  windowsHide: true,
  detached: posix, // its own process group: signals arrive through the shim only
  env: { DIFY_MOCK_EXIT_WITH_PARENT: 'true', ...process.env },
});

// stopping: a signal that ends the binary was passed on, so its clean
// shutdown is under way; the owner watch must not add a second one (which
// would end it at once), though a user's second Ctrl-C still does.
let stopping = false;
const forward = (sig) => {
  if (['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'].includes(sig)) stopping = true;
  if (child.exitCode === null && child.signalCode === null) child.kill(sig);
};
const forwarded = Object.keys(os.constants.signals).filter((s) => !NOT_FORWARDED.has(s));
for (const sig of forwarded) {
  try {
    process.on(sig, () => forward(sig));
  } catch {
    // a signal this platform lets no one catch
  }
}

// procInfo(pid) → { ppid, name } of another process, or null where neither
// /proc nor ps can tell.
function procInfo(pid) {
  try {
    if (process.platform === 'linux') {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')'); // the name may hold spaces and parentheses
      return { name: stat.slice(stat.indexOf('(') + 1, close), ppid: Number(stat.slice(close + 2).split(' ')[1]) };
    }
    if (posix) {
      const r = spawnSync('ps', ['-o', 'ppid=', '-o', 'comm=', '-p', String(pid)], { encoding: 'utf8' });
      const m = /^\s*(\d+)\s+(.+?)\s*$/.exec(r.stdout || '');
      if (m) return { ppid: Number(m[1]), name: path.basename(m[2]).replace(/^-/, '') };
    }
  } catch {
    // unknown: watch the parent only
  }
  return null;
}

const SHELLS = new Set(['sh', 'dash', 'bash', 'zsh', 'ksh', 'ash', 'mksh', 'busybox']);
const parent = process.ppid;
const owners = [];
if (posix && process.env.npm_command) {
  const p = procInfo(parent);
  if (p && SHELLS.has(p.name) && p.ppid > 1) owners.push(p.ppid);
}
const gone = (pid) => {
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return err.code === 'ESRCH';
  }
};
// Re-parented, or npm above the shell gone: the owner has ended.
const watch = setInterval(() => {
  if (process.ppid !== parent || owners.some(gone)) {
    clearInterval(watch);
    if (!stopping) forward('SIGTERM');
  }
}, PARENT_POLL_MS);
watch.unref();

child.on('error', (err) => {
  console.error(`dify-mock: cannot run ${exe}: ${err.message}`);
  process.exit(1);
});
child.on('exit', (code, signal) => {
  clearInterval(watch);
  if (signal) {
    // End the way the binary ended, so the caller sees the same status.
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
