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
  /** More `serve` flags, e.g. `['--mode', 'agent-chat']`. */
  args?: string[];
  /** Extra environment variables for the server process. */
  env?: Record<string, string>;
  /** Reject if the server has not printed its address after this long (default 15000). */
  startTimeoutMs?: number;
  /** `'inherit'` copies the server's output to this process's; `'ignore'` (default) drops it. */
  stdio?: 'ignore' | 'inherit';
}

/** A running dify-mock. */
export interface DifyMock {
  /** API base URL for a Dify client, e.g. `http://127.0.0.1:41234/v1`. */
  baseUrl: string;
  /** Server root, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** The port it listens on. */
  port: number;
  /** The server process. */
  process: ChildProcess;
  /** Stops the server (SIGTERM: in-flight streams get a final frame) and resolves once it has exited. */
  stop(): Promise<void>;
}

/** Starts `dify-mock serve` and resolves once it accepts requests. */
export function startDifyMock(options?: DifyMockOptions): Promise<DifyMock>;

/** Absolute path of the prebuilt binary for this machine (`DIFY_MOCK_BINARY_PATH` overrides it). */
export function binaryPath(): string;
