#!/usr/bin/env node
'use strict';
// build.js — writes the npm packages of dify-mock: @difyops/dify-mock (the
// bin shim and the JS API) and one @difyops/dify-mock-<os>-<cpu> package per
// platform holding that platform's prebuilt binary. The main package lists
// the platform packages as optionalDependencies with os/cpu fields, so npm,
// pnpm and yarn install only the one matching the machine, from the registry
// or a mirror, with no install script and no download of its own.
//
// Usage:
//   node distribution/npm/build.js --version V --out DIR --dist dist [--pack]
//       binaries from a GoReleaser run (dist/artifacts.json, build id dify-mock)
//   node distribution/npm/build.js --version V --out DIR --go-build [--platforms linux-x64,darwin-arm64] [--pack]
//       cross-compiles with `go build` instead (default: this machine's platform only)
// --pack runs `npm pack` for every package into DIR/tarballs (offline; it
// only reads the folders). Publish the tarballs with `npm publish <tgz>`, the
// platform packages first.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const REPO = path.resolve(__dirname, '..', '..');
const SCOPE = '@difyops';

// Go GOOS/GOARCH ↔ Node platform/arch (the package name suffix).
const GO_TO_NODE_OS = { linux: 'linux', darwin: 'darwin', windows: 'win32', freebsd: 'freebsd' };
const GO_TO_NODE_CPU = { amd64: 'x64', arm64: 'arm64', arm: 'arm', 386: 'ia32' };

function parseArgs(argv) {
  const opts = { pack: false, goBuild: false, platforms: '' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case '--version': opts.version = next().replace(/^v/, ''); break;
      case '--out': opts.out = path.resolve(next()); break;
      case '--dist': opts.dist = path.resolve(next()); break;
      case '--go-build': opts.goBuild = true; break;
      case '--platforms': opts.platforms = next(); break;
      case '--commit': opts.commit = next(); break;
      case '--pack': opts.pack = true; break;
      case '-h': case '--help': usage(); break;
      default: usage(`unknown argument ${a}`);
    }
  }
  if (!opts.version || !/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/.test(opts.version)) {
    usage('--version must be a semantic version such as 1.2.3 or 1.2.4-next');
  }
  if (!opts.out) usage('--out is required');
  if (!!opts.dist === opts.goBuild) usage('give exactly one of --dist DIR and --go-build');
  return opts;
}

function usage(msg) {
  const text = fs.readFileSync(__filename, 'utf8').split('\n').filter((l) => l.startsWith('//   ') || l.startsWith('// --pack'))
    .map((l) => l.slice(3)).join('\n');
  if (msg) {
    console.error(`build.js: ${msg}\n\n${text}`);
    process.exit(2);
  }
  console.log(text);
  process.exit(0);
}

// binaries: [{goos, goarch, file}] from GoReleaser's dist/artifacts.json.
function fromDist(dist) {
  const artifacts = JSON.parse(fs.readFileSync(path.join(dist, 'artifacts.json'), 'utf8'));
  const out = [];
  for (const a of artifacts) {
    if (a.type !== 'Binary' || !a.extra || a.extra.ID !== 'dify-mock') continue;
    // artifacts.json paths are relative to the folder GoReleaser ran in.
    const file = path.isAbsolute(a.path) ? a.path : path.resolve(path.dirname(dist), a.path);
    out.push({ goos: a.goos, goarch: a.goarch, file });
  }
  if (out.length === 0) throw new Error(`${dist}/artifacts.json lists no dify-mock binaries (build id dify-mock)`);
  return out;
}

// binaries built here with the same flags as .goreleaser.yml.
function goBuild(platforms, version, commit, work) {
  const nodeToGo = (s) => {
    const [os, cpu] = s.split('-');
    const goos = Object.keys(GO_TO_NODE_OS).find((k) => GO_TO_NODE_OS[k] === os);
    const goarch = Object.keys(GO_TO_NODE_CPU).find((k) => GO_TO_NODE_CPU[k] === cpu);
    if (!goos || !goarch) throw new Error(`unknown platform ${s}; use names such as linux-x64, darwin-arm64, win32-x64`);
    return { goos, goarch };
  };
  const list = platforms ? platforms.split(',').map((s) => s.trim()).filter(Boolean)
    : [`${process.platform}-${process.arch}`];
  return list.map((p) => {
    const { goos, goarch } = nodeToGo(p);
    const file = path.join(work, `${goos}_${goarch}`, goos === 'windows' ? 'dify-mock.exe' : 'dify-mock');
    const ldflags = `-s -w -X main.version=${version} -X main.commit=${commit}` +
      ` -X github.com/difyops/terraform-provider-dify/dify.Version=${version}`;
    execFileSync('go', ['build', '-trimpath', '-ldflags', ldflags, '-o', file, './mockserver/cmd/dify-mock'], {
      cwd: REPO, stdio: 'inherit', env: { ...process.env, GOOS: goos, GOARCH: goarch, CGO_ENABLED: '0' },
    });
    return { goos, goarch, file };
  });
}

function writeJSON(file, value) {
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const commit = opts.commit || gitCommit();
  fs.rmSync(opts.out, { recursive: true, force: true });
  fs.mkdirSync(opts.out, { recursive: true });
  const binaries = opts.dist ? fromDist(opts.dist)
    : goBuild(opts.platforms, opts.version, commit, path.join(opts.out, '.go-build'));
  const main = JSON.parse(fs.readFileSync(path.join(__dirname, 'dify-mock', 'package.json'), 'utf8'));
  const license = path.join(REPO, 'LICENSE');
  const dirs = [];
  const optional = {};
  for (const b of binaries) {
    const os = GO_TO_NODE_OS[b.goos];
    const cpu = GO_TO_NODE_CPU[b.goarch];
    if (!os || !cpu) continue; // a GOOS/GOARCH Node has no name for
    const suffix = `${os}-${cpu}`;
    const name = `${SCOPE}/dify-mock-${suffix}`;
    const dir = path.join(opts.out, `dify-mock-${suffix}`);
    const exe = os === 'win32' ? 'dify-mock.exe' : 'dify-mock';
    fs.mkdirSync(path.join(dir, 'bin'), { recursive: true });
    fs.copyFileSync(b.file, path.join(dir, 'bin', exe));
    fs.chmodSync(path.join(dir, 'bin', exe), 0o755);
    fs.copyFileSync(license, path.join(dir, 'LICENSE'));
    writeJSON(path.join(dir, 'package.json'), {
      name,
      version: opts.version,
      description: `The ${os}-${cpu} binary of @difyops/dify-mock (installed by it; not meant to be used alone).`,
      license: main.license,
      repository: main.repository,
      os: [os],
      cpu: [cpu],
      files: [`bin/${exe}`, 'LICENSE'],
      preferUnplugged: true,
    });
    fs.writeFileSync(path.join(dir, 'README.md'),
      `# ${name}\n\nThe ${os}/${cpu} binary of [@difyops/dify-mock](https://www.npmjs.com/package/@difyops/dify-mock), ` +
      'version ' + opts.version + '. Install @difyops/dify-mock instead; npm picks this package on matching machines.\n');
    optional[name] = opts.version;
    dirs.push(dir);
  }
  const mainDir = path.join(opts.out, 'dify-mock');
  fs.mkdirSync(path.join(mainDir, 'bin'), { recursive: true });
  for (const f of ['index.js', 'index.d.ts', 'README.md', 'bin/dify-mock.js']) {
    fs.copyFileSync(path.join(__dirname, 'dify-mock', f), path.join(mainDir, f));
  }
  fs.chmodSync(path.join(mainDir, 'bin', 'dify-mock.js'), 0o755);
  fs.copyFileSync(license, path.join(mainDir, 'LICENSE'));
  writeJSON(path.join(mainDir, 'package.json'), {
    ...main, version: opts.version, files: [...main.files, 'LICENSE'],
    optionalDependencies: Object.fromEntries(Object.entries(optional).sort()),
  });
  dirs.push(mainDir);
  fs.rmSync(path.join(opts.out, '.go-build'), { recursive: true, force: true });

  if (opts.pack) {
    const tarballs = path.join(opts.out, 'tarballs');
    fs.mkdirSync(tarballs, { recursive: true });
    for (const dir of dirs) {
      execFileSync('npm', ['pack', '--silent', '--pack-destination', tarballs], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
    }
  }
  for (const dir of dirs) console.log(dir);
}

function gitCommit() {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'none';
  }
}

try {
  main();
} catch (err) {
  console.error(`build.js: ${err.message}`);
  process.exit(1);
}
