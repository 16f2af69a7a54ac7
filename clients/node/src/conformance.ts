/**
 * The shared conformance vectors (tests/conformance, see its README) run over
 * native gRPC: ToModelTools compared as JSON data, GenerateStubs as text,
 * dispatch cases by success, error code and a part of the message.
 */

import { readFileSync } from "node:fs";
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ModelFormat } from "../../../generated/ts/toolwire/v1/registry_service_pb.ts";
import { ToolDefinitionSchema } from "../../../generated/ts/toolwire/v1/tool_pb.ts";
import { errorCodeName, type RegistryClient, structuredOutput } from "./registry.ts";

/** The model formats by the names the fixture files use. */
export const FORMATS: Record<string, ModelFormat> = {
  anthropic: ModelFormat.ANTHROPIC,
  openai_chat: ModelFormat.OPENAI_CHAT,
  openai_responses: ModelFormat.OPENAI_RESPONSES,
  gemini: ModelFormat.GEMINI,
  mcp: ModelFormat.MCP,
};

export interface DispatchCase {
  id: string;
  tool: string;
  arguments_json: string;
  expect:
    | { success: true; structured_output: JsonValue }
    | { success: false; error_code: string; error_contains: string };
}

export interface Outcome {
  success: boolean;
  error_code?: string;
  error?: string;
  structured_output?: JsonValue;
}

/** JSON equality as data: object key order does not matter, array order does. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, i) => sameJson(item, b[i]))
    );
  }
  if (a !== null && b !== null && typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    const bb = b as Record<string, unknown>;
    return (
      ka.length === kb.length &&
      ka.every((k) => Object.hasOwn(bb, k) && sameJson((a as Record<string, unknown>)[k], bb[k]))
    );
  }
  return a === b;
}

export function passes(expect: DispatchCase["expect"], got: Outcome): boolean {
  if (expect.success) {
    return got.success && sameJson(got.structured_output ?? null, expect.structured_output);
  }
  return (
    !got.success && got.error_code === expect.error_code &&
    (got.error ?? "").includes(expect.error_contains)
  );
}

export class Vectors {
  constructor(private readonly dir: URL) {}

  private json(path: string): unknown {
    return JSON.parse(readFileSync(new URL(path, this.dir), "utf8"));
  }

  /** tools.json read with the protobuf runtime: it is proto3 JSON of ToolDefinition. */
  toolNames(): string[] {
    const { tools } = this.json("tools.json") as { tools: JsonValue[] };
    return tools.map((t) => fromJson(ToolDefinitionSchema, t).name);
  }

  dispatchCases(): DispatchCase[] {
    return (this.json("dispatch_cases.json") as { cases: DispatchCase[] }).cases;
  }

  modelTools(format: string): { tools: JsonValue[]; diagnostics: JsonValue[] } {
    return this.json(`expected/model_tools/${format}.json`) as {
      tools: JsonValue[];
      diagnostics: JsonValue[];
    };
  }

  stubs(): string {
    return readFileSync(new URL("expected/stubs.ts", this.dir), "utf8");
  }
}

export async function runModelTools(registry: RegistryClient, vectors: Vectors, names: string[]) {
  const report: Record<string, { matches: boolean; tools: JsonValue; diagnostics: JsonValue }> = {};
  for (const [name, format] of Object.entries(FORMATS)) {
    const response = await registry.toModelTools({ format, names });
    const document = {
      tools: JSON.parse(response.toolsJson) as JsonValue,
      diagnostics: response.diagnostics.map((d) => ({
        tool_name: d.toolName,
        path: d.path,
        message: d.message,
      })),
    };
    report[name] = { matches: sameJson(document, vectors.modelTools(name)), ...document };
  }
  return report;
}

export async function runStubs(registry: RegistryClient, vectors: Vectors, names: string[]) {
  const { typescript } = await registry.generateStubs({ names });
  return { matches: typescript === vectors.stubs(), typescript };
}

export async function runDispatchCases(registry: RegistryClient, vectors: Vectors) {
  const cases = [];
  for (const c of vectors.dispatchCases()) {
    const { result } = await registry.dispatch({ name: c.tool, argumentsJson: c.arguments_json });
    const actual: Outcome = result === undefined
      ? { success: false, error_code: "unspecified", error: "no result" }
      : result.success
      ? { success: true, structured_output: structuredOutput(result) ?? null }
      : { success: false, error_code: errorCodeName(result.errorCode), error: result.error };
    cases.push({ id: c.id, pass: passes(c.expect, actual), actual });
  }
  return { total: cases.length, passed: cases.filter((c) => c.pass).length, cases };
}
