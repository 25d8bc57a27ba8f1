import type { ChildProcess } from 'node:child_process';

/** Options of {@link startDifyMock}; each maps to a `dify-mock serve` flag. */
export interface DifyMockOptions {
  /** Replay speed: 1 = recorded timing (the default), 2 = twice as fast, 0 = no delays (`--speed`). */
  speed?: number;
  /** Folder of cassettes to serve instead of the built-in set (`--cassettes`). */
  cassettes?: string;
  /** Fault spec for every request without one of its own, e.g. `"status:429;retry-after=5"` (`--fault`). */
  fault?: string;
  /** Port to listen on; 0 (the default) picks a free one. */
  port?: number;
  /** Address to listen on (default `127.0.0.1`). */
  host?: string;
  /** Accepted API keys (`--api-key`); without any, every `Bearer app-…` key is accepted. */
  apiKeys?: string[];
  /**
   * Several apps in one server, each reached by its own API keys (`--app NAME=PATH`, in this order: the
   * first is the default app). A path is an app folder (its `app.yaml` or Dify DSL file and cassettes,
   * maybe a `keys.txt`) or a Dify app DSL file (`*.yml`). `keys` are passed in `DIFY_MOCK_APP_KEYS`,
   * never on the command line. See `DifyMock.apps` for the keys that reach each app.
   */
  apps?: Record<string, string | DifyMockAppOptions>;
  /** More `serve` flags, e.g. `['--mode', 'agent-chat']`. */
  args?: string[];
  /** Extra environment variables for the server process. */
  env?: Record<string, string>;
  /** Reject if the server has not printed its address after this long (default 15000). */
  startTimeoutMs?: number;
  /** `'inherit'` copies the server's output to this process's; `'ignore'` (default) drops it. */
  stdio?: 'ignore' | 'inherit';
}

/** One app of {@link DifyMockOptions.apps}. */
export interface DifyMockAppOptions {
  /** The app folder or Dify app DSL file (relative to the current directory). */
  path: string;
  /** API keys that reach this app (`--app-key NAME=KEY`), besides its folder's `keys.txt`. */
  keys?: string[];
}

/** One app of a running dify-mock. */
export interface DifyMockApp {
  /** Its name, as in `apps`. */
  name: string;
  /** The keys that reach it: the ones given, then its `keys.txt`'s; with neither, `app-NAME`. */
  keys: string[];
  /** The first of `keys`. */
  key: string;
  /** Whether it is the default app (the first): the control API and the console address it without `?app=`. */
  default: boolean;
}

/** A running dify-mock. */
export interface DifyMock {
  /** API base URL for a Dify client, e.g. `http://127.0.0.1:41234/v1`. */
  baseUrl: string;
  /** Server root, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** The port it listens on. */
  port: number;
  /** Each app of `options.apps` by name, with its keys (`{}` without `apps`). */
  apps: Record<string, DifyMockApp>;
  /** The server process. */
  process: ChildProcess;
  /** Stops the server (SIGTERM: in-flight streams get a final frame) and resolves once it has exited. */
  stop(): Promise<void>;
}

/** Starts `dify-mock serve` and resolves once it accepts requests. */
export function startDifyMock(options?: DifyMockOptions): Promise<DifyMock>;

/** Absolute path of the prebuilt binary for this machine (`DIFY_MOCK_BINARY_PATH` overrides it). */
export function binaryPath(): string;
