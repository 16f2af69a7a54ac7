/**
 * The bridge against a live toolwire HTTP listener (started by
 * tests/http/test_deno_bridge.py, which passes the listener's URL and a run
 * token in the environment): the path code in the sandbox takes to call tools.
 *
 *   TOOLWIRE_URL        the listener, e.g. http://127.0.0.1:50052
 *   TOOLWIRE_TOKEN      a live run token (every tool but execute_code)
 *   TOOLWIRE_BAD_TOKEN  a token the server never issued
 */

import { Code, ConnectError } from "@connectrpc/connect";
import { type CallTool, createCallTool, installBridge, ToolError } from "./bridge.ts";

// Small assertions of our own: the standard library would be a remote import
// and node:assert needs @types/node; this test runs offline on node_modules.
function assert(value: unknown, message = "expected a truthy value"): asserts value {
  if (!value) throw new Error(message);
}

/** JSON with object keys sorted: a Struct is a map, so key order is not part of a value. */
function canonical(value: unknown): string {
  return JSON.stringify(
    value,
    (_key, v: unknown) =>
      v !== null && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : v,
  );
}

function assertEquals(actual: unknown, expected: unknown): void {
  const [a, e] = [canonical(actual), canonical(expected)];
  if (a !== e) throw new Error(`expected ${e}, got ${a}`);
}

function assertMatch(text: string, pattern: RegExp): void {
  if (!pattern.test(text)) throw new Error(`${JSON.stringify(text)} does not match ${pattern}`);
}

async function rejection(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
  } catch (e) {
    return e;
  }
  throw new Error("the call should have been rejected");
}

async function toolError(call: Promise<unknown>): Promise<ToolError> {
  const error = await rejection(call);
  assert(error instanceof ToolError, `expected a ToolError, got ${error}`);
  return error;
}

function env(name: string): string {
  const value = Deno.env.get(name);
  if (!value) {
    throw new Error(`${name} is not set; run this through tests/http/test_deno_bridge.py`);
  }
  return value;
}

const baseUrl = env("TOOLWIRE_URL");
const callTool = createCallTool({ baseUrl, token: env("TOOLWIRE_TOKEN") });

Deno.test("a tool with structured output returns it as JSON", async () => {
  assertEquals(await callTool("text_stats", { text: "hello big world" }), {
    length: 15,
    words: ["hello", "big", "world"],
    upper: "HELLO BIG WORLD",
  });
  assertEquals(await callTool("add", { a: 2, b: 3 }), 5);
});

Deno.test("installBridge defines the __callTool__ that stubs call", async () => {
  installBridge({ baseUrl, token: env("TOOLWIRE_TOKEN") });
  const global = (globalThis as { __callTool__?: CallTool }).__callTool__;
  assert(global !== undefined, "__callTool__ is not defined");
  assertEquals(await global("add", { a: 40, b: 2 }), 42);
});

Deno.test("a tool that fails throws a ToolError with code handler_error", async () => {
  const error = await toolError(callTool("explode", { text: "boom" }));
  assertEquals(error.name, "ToolError");
  assertEquals(error.tool, "explode");
  assertEquals(error.code, "handler_error");
  assertMatch(error.message, /cannot handle 'boom'/);
});

Deno.test("invalid arguments throw a ToolError with code invalid_arguments", async () => {
  const error = await toolError(callTool("add", { a: 1 }));
  assertEquals(error.code, "invalid_arguments");
  assertMatch(error.message, /missing required field 'b'/);
});

Deno.test("an unknown tool throws a ToolError with code not_found", async () => {
  const error = await toolError(callTool("no_such_tool", {}));
  assertEquals(error.code, "not_found");
  assertMatch(error.message, /no tool named 'no_such_tool'/);
});

Deno.test("a tool outside the run's grant throws denied_by_policy", async () => {
  const error = await toolError(callTool("execute_code", { text: "1" }));
  assertEquals(error.code, "denied_by_policy");
});

Deno.test("a call without a valid token is rejected as unauthenticated", async () => {
  for (const token of [env("TOOLWIRE_BAD_TOKEN"), ""]) {
    const error = await rejection(createCallTool({ baseUrl, token })("add", { a: 1, b: 2 }));
    assert(error instanceof ConnectError, `expected a ConnectError, got ${error}`);
    assert(!(error instanceof ToolError), "a transport error is not a ToolError");
    assertEquals(error.code, Code.Unauthenticated);
    assertMatch(error.rawMessage, /token/);
  }
});
