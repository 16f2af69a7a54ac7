/**
 * toolwire's trusted sandbox runner: the entrypoint of every sandboxed run.
 *
 * The host (toolwire.sandbox, in Python) starts `deno run … runner.ts` with
 * the run's permissions. This module and its static imports (the bridge, the
 * generated client, the npm packages) load before anything else and without
 * permission checks; the user's code is never part of that graph. Then:
 *
 * 1. the runner prints READY on stdout and waits for ONE JSON line on stdin,
 *    `{baseUrl, token, nonce, module}` (never argv or env: the user's code can
 *    read those), so a process can be started ahead of time (a warm pool);
 * 2. it installs the bridge (`__callTool__`), imports the user's module with a
 *    dynamic import (permission-checked: it must lie in the run's folder) and
 *    awaits its default export;
 * 3. it writes ONE result line on stdout, the nonce followed by JSON —
 *    `{"ok":true,"value":…}` or `{"ok":false,"error":{…}}` — and exits at once,
 *    dropping whatever timers the code left behind.
 *
 * Everything else on stdout and stderr is the code's console. The nonce is
 * unknown to the code, so a line it prints cannot pass for the result; a run
 * that ends without a result line (`Deno.exit`, a crash, a kill) failed.
 *
 * The token is kept out of argv and env, but it is not a secret from the code:
 * code that replaces `globalThis.fetch` (or `Headers.prototype.set`) sees it
 * on its next tool call. That gives it nothing `__callTool__` does not: the
 * registry scopes the token to this run's grant and revokes it when the run
 * ends, and the network reaches only the registry.
 */

import { installBridge, ToolError } from "../../../clients/deno/bridge.ts";

const READY = "TOOLWIRE_RUNNER_READY";
const MAX_CONFIG_BYTES = 64 * 1024;

// Taken before any user code runs: the code may replace globals afterwards.
const stdoutWriteSync = Deno.stdout.writeSync.bind(Deno.stdout);
const stdinRead = Deno.stdin.read.bind(Deno.stdin);
const exit: (code?: number) => never = Deno.exit;
const stringify = JSON.stringify;
const parse = JSON.parse;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const encode = encoder.encode.bind(encoder);
const isError = (value: unknown): value is Error => value instanceof Error;

interface Config {
  baseUrl: string;
  token: string;
  nonce: string;
  module: string;
}

interface ErrorInfo {
  name: string;
  message: string;
  stack: string;
  code?: string;
  tool?: string;
}

function writeAll(text: string): void {
  const bytes = encode(text);
  let offset = 0;
  while (offset < bytes.length) {
    offset += stdoutWriteSync(bytes.subarray(offset));
  }
}

async function readConfig(): Promise<Config> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const buffer = new Uint8Array(4096);
  for (;;) {
    const n = await stdinRead(buffer);
    if (n === null) break;
    const chunk = buffer.slice(0, n);
    const newline = chunk.indexOf(10);
    chunks.push(newline >= 0 ? chunk.subarray(0, newline) : chunk);
    size += n;
    if (newline >= 0) break;
    if (size > MAX_CONFIG_BYTES) throw new Error("the run's configuration line is too long");
  }
  if (chunks.length === 0) exit(3); // the host went away before sending a run
  const text = decoder.decode(concat(chunks, size));
  const config = parse(text) as Partial<Config>;
  for (const key of ["baseUrl", "token", "nonce", "module"] as const) {
    if (typeof config[key] !== "string") throw new Error(`the run's configuration lacks '${key}'`);
  }
  return config as Config;
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out.subarray(0, offset);
}

function safeString(value: unknown): string {
  try {
    if (typeof value === "string") return value;
    const json = stringify(value);
    return json === undefined ? String(value) : json;
  } catch {
    try {
      return String(value);
    } catch {
      return Object.prototype.toString.call(value);
    }
  }
}

function describe(error: unknown): ErrorInfo {
  try {
    if (isError(error)) {
      const info: ErrorInfo = {
        name: String(error.name),
        message: String(error.message),
        stack: typeof error.stack === "string" ? error.stack : "",
      };
      if (error instanceof ToolError) {
        info.code = error.code;
        info.tool = error.tool;
      }
      return info;
    }
    return {
      name: "Error",
      message: `a non-Error value was thrown: ${safeString(error)}`,
      stack: "",
    };
  } catch {
    return { name: "Error", message: "an error that cannot be described was thrown", stack: "" };
  }
}

let nonce = "";
let finished = false;

/** Write the result line and end the process (nothing of the code runs after this). */
function finish(result: { ok: true; value: unknown } | { ok: false; error: ErrorInfo }): never {
  if (finished) exit(4);
  finished = true;
  let line: string;
  if (result.ok) {
    const value = result.value;
    let json: string | undefined;
    let problem = "";
    if (typeof value === "function" || typeof value === "symbol") {
      problem = `the code returned a ${typeof value}, which has no JSON form`;
    } else {
      try {
        json = stringify(value);
      } catch (error) {
        problem = `the code's return value is not JSON-serializable: ${describe(error).message}`;
      }
    }
    line = problem
      ? stringify({ ok: false, error: { name: "TypeError", message: problem, stack: "" } })
      : `{"ok":true,"value":${json ?? "null"}}`;
  } else {
    line = stringify(result);
  }
  try {
    writeAll(`${nonce}${line}\n`);
  } catch {
    exit(5); // stdout is gone (the code closed it): the host sees no result
  }
  exit(0);
}

writeAll(`${READY}\n`);
const config = await readConfig();
nonce = config.nonce;
installBridge({ baseUrl: config.baseUrl, token: config.token });

// A Worker is a second V8 isolate: its heap is outside --max-old-space-size and
// its start-up reservations alone exceed the run's RLIMIT_DATA cap (the process
// would die "out of memory"). Refuse it with a message instead. (It would have
// the same permissions as the run: this is about resources, not access.)
class UnavailableWorker {
  constructor() {
    throw new TypeError("Worker is not available in toolwire's sandbox");
  }
}
Object.defineProperty(globalThis, "Worker", {
  value: UnavailableWorker,
  writable: false,
  configurable: false,
  enumerable: false,
});

// An exception thrown from a timer or a promise rejection nobody handles would
// end the process with Deno's own report; make it the run's error instead.
globalThis.addEventListener("error", (event) => {
  event.preventDefault();
  finish({ ok: false, error: describe(event.error) });
});
globalThis.addEventListener("unhandledrejection", (event) => {
  event.preventDefault();
  const error = describe(event.reason);
  error.message = `${error.message} (an unhandled promise rejection: await or catch every promise)`;
  finish({ ok: false, error });
});

try {
  const module = await import(config.module);
  const main = module.default;
  if (typeof main !== "function") throw new Error("the user module has no default function");
  finish({ ok: true, value: await main() });
} catch (error) {
  finish({ ok: false, error: describe(error) });
}
