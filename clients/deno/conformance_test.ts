/**
 * The shared conformance vectors (tests/conformance, see its README) over
 * gRPC-web from Deno, with Connect-ES: ToModelTools compared as JSON data
 * (and, since tools_json is text made by the server, with its key order),
 * GenerateStubs as text, every dispatch case by success, error code, a part
 * of the message and the structured output.
 *
 * Started by tests/http/test_deno_conformance.py against a listener whose
 * registry holds only the conformance tools, registered in the server's process:
 *
 *   TOOLWIRE_URL            the HTTP listener, e.g. http://127.0.0.1:50052
 *   TOOLWIRE_TOKEN          a run token whose grant permits every conformance tool
 *   TOOLWIRE_CONFORMANCE    the tests/conformance folder (read-only access to it)
 */

import { createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { fromJson, type JsonValue, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import {
  ModelFormat,
  RegistryService,
} from "../../generated/ts/toolwire/v1/registry_service_pb.ts";
import { ToolDefinitionSchema } from "../../generated/ts/toolwire/v1/tool_pb.ts";
import { errorCodeName } from "./bridge.ts";

// Small assertions of our own: the standard library would be a remote import
// and node:assert needs @types/node; this test runs offline on node_modules.
function assert(value: unknown, message = "expected a truthy value"): asserts value {
  if (!value) throw new Error(message);
}

/** JSON equality as data: object key order does not matter, array order does. */
function sameJson(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length &&
      a.every((item, i) => sameJson(item, b[i]));
  }
  if (a !== null && b !== null && typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a);
    const bb = b as Record<string, unknown>;
    return ka.length === Object.keys(b).length &&
      ka.every((k) => Object.hasOwn(bb, k) && sameJson((a as Record<string, unknown>)[k], bb[k]));
  }
  return a === b;
}

function assertSameJson(actual: unknown, expected: unknown, what: string): void {
  if (!sameJson(actual, expected)) {
    throw new Error(
      `${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`,
    );
  }
}

function env(name: string): string {
  const value = Deno.env.get(name);
  if (!value) {
    throw new Error(`${name} is not set; run this through tests/http/test_deno_conformance.py`);
  }
  return value;
}

const dir = env("TOOLWIRE_CONFORMANCE").replace(/\/+$/, "");

async function readJson<T>(path: string): Promise<T> {
  return JSON.parse(await Deno.readTextFile(`${dir}/${path}`)) as T;
}

interface DispatchCase {
  id: string;
  tool: string;
  arguments_json: string;
  expect:
    | { success: true; structured_output: JsonValue }
    | { success: false; error_code: string; error_contains: string };
}

/** The model formats by the names the fixture files use. */
const FORMATS: Record<string, ModelFormat> = {
  anthropic: ModelFormat.ANTHROPIC,
  openai_chat: ModelFormat.OPENAI_CHAT,
  openai_responses: ModelFormat.OPENAI_RESPONSES,
  gemini: ModelFormat.GEMINI,
  mcp: ModelFormat.MCP,
};

const bearer: Interceptor = (next) => (request) => {
  request.header.set("authorization", `Bearer ${env("TOOLWIRE_TOKEN")}`);
  return next(request);
};
const registry = createClient(
  RegistryService,
  createGrpcWebTransport({ baseUrl: env("TOOLWIRE_URL"), interceptors: [bearer] }),
);

// tools.json is proto3 JSON of ToolDefinition: read it with the protobuf runtime.
const toolNames = (await readJson<{ tools: JsonValue[] }>("tools.json")).tools
  .map((t) => fromJson(ToolDefinitionSchema, t).name);
const cases = (await readJson<{ cases: DispatchCase[] }>("dispatch_cases.json")).cases;

Deno.test("List shows exactly the conformance tools, sorted by name", async () => {
  const { tools } = await registry.list({});
  assertSameJson(tools.map((t) => t.name), [...toolNames].sort(), "tool names");
});

for (const [name, format] of Object.entries(FORMATS)) {
  Deno.test(`ToModelTools ${name} equals expected/model_tools/${name}.json`, async () => {
    const response = await registry.toModelTools({ format, names: [] });
    const document = {
      tools: JSON.parse(response.toolsJson) as JsonValue,
      diagnostics: response.diagnostics.map((d) => ({
        tool_name: d.toolName,
        path: d.path,
        message: d.message,
      })),
    };
    const expected = await readJson<JsonValue>(`expected/model_tools/${name}.json`);
    assertSameJson(document, expected, name);
    // Registered in the server's process, the schemas kept their key order,
    // and tools_json is text: the order survives gRPC-web too.
    assert(
      JSON.stringify(document) === JSON.stringify(expected),
      `${name}: equal as data but not in key order`,
    );
  });
}

Deno.test("GenerateStubs equals expected/stubs.ts as text", async () => {
  const { typescript } = await registry.generateStubs({ names: [] });
  const expected = await Deno.readTextFile(`${dir}/expected/stubs.ts`);
  assert(typescript === expected, `stubs differ:\n${typescript}`);
});

for (const c of cases) {
  Deno.test(`dispatch ${c.id}`, async () => {
    const { result } = await registry.dispatch({ name: c.tool, argumentsJson: c.arguments_json });
    assert(result !== undefined, `${c.id}: the registry sent no result`);
    const expect = c.expect;
    if (expect.success) {
      assert(result.success, `${c.id}: expected success, got ${result.error}`);
      const output = result.structuredOutput === undefined
        ? null
        : toJson(ValueSchema, result.structuredOutput);
      assertSameJson(output, expect.structured_output, c.id);
    } else {
      assert(!result.success, `${c.id}: expected a failure, got success`);
      const code = errorCodeName(result.errorCode);
      assert(code === expect.error_code, `${c.id}: expected ${expect.error_code}, got ${code}`);
      assert(
        result.error.includes(expect.error_contains),
        `${c.id}: ${JSON.stringify(result.error)} lacks ${JSON.stringify(expect.error_contains)}`,
      );
    }
  });
}
