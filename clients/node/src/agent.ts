/**
 * A small Node agent that uses toolwire over native gRPC, and proves it.
 *
 *   node --import ./clients/node/register.mjs clients/node/src/agent.ts \
 *     --target 127.0.0.1:50051 [--conformance tests/conformance]
 *
 * Against a registry that serves the conformance tools
 * (`toolwire serve --no-builtins --tools conformance_tools`), it
 *  1. opens a Provide stream and serves a tool of its own, `node_reverse`;
 *  2. lists the tools;
 *  3. dispatches a Python-hosted tool;
 *  4. has the registry dispatch `node_reverse` (registry → this process → back);
 *  5. converts the definitions with ToModelTools and generates stubs;
 *  6. runs the dispatch conformance cases,
 * and prints a JSON report on stdout; the exit code is 0 when everything held.
 */

import { pathToFileURL } from "node:url";
import { type JsonValue } from "@bufbuild/protobuf";
import { ModelFormat } from "../../../generated/ts/toolwire/v1/registry_service_pb.ts";
import { ParameterType, SafetyTier } from "../../../generated/ts/toolwire/v1/tool_pb.ts";
import { runDispatchCases, runModelTools, runStubs, sameJson, Vectors } from "./conformance.ts";
import {
  connectRegistry,
  errorCodeName,
  type NodeTool,
  Provider,
  type RegistryClient,
  structuredOutput,
} from "./registry.ts";

const nodeReverse: NodeTool = {
  definition: {
    name: "node_reverse",
    description: "Reverse a text, character by character (served by a Node process).",
    parameters: [
      {
        name: "text",
        type: ParameterType.STRING,
        description: "The text to reverse.",
        required: true,
      },
    ],
    safetyTier: SafetyTier.READ_ONLY,
    group: "node",
  },
  run(args) {
    const text = String(args.text);
    return { reversed: Array.from(text).reverse().join(""), runtime: `node ${process.version}` };
  },
};

function option(name: string, fallback?: string): string {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? process.argv[at + 1] : fallback;
  if (value === undefined) throw new Error(`--${name} is required`);
  return value;
}

async function listNames(registry: RegistryClient): Promise<string[]> {
  return (await registry.list({})).tools.map((t) => t.name);
}

async function dispatch(registry: RegistryClient, name: string, args: JsonValue) {
  const { result } = await registry.dispatch({ name, argumentsJson: JSON.stringify(args) });
  if (result === undefined) throw new Error(`no result from '${name}'`);
  return {
    name,
    arguments: args,
    success: result.success,
    output: result.output,
    error: result.error,
    error_code: result.success ? null : errorCodeName(result.errorCode),
    structured_output: structuredOutput(result) ?? null,
  };
}

async function main(): Promise<number> {
  const target = option("target");
  const dir = option("conformance", new URL("../../../tests/conformance/", import.meta.url).href);
  const vectors = new Vectors(dir.includes("://") ? new URL(dir) : pathToFileURL(`${dir}/`));
  const registry = connectRegistry(target);
  const fixtureTools = vectors.toolNames();

  // 1. serve a tool of our own
  const provider = await Provider.start(registry, "node-agent", [nodeReverse]);
  const stored = provider.definitions[0];

  // 2. list
  const listed = await listNames(registry);

  // 3. a tool that lives in the Python server
  const weather = { location: "Zürich", days: 3 };
  const pythonTool = await dispatch(registry, "get_weather", weather);

  // 4. our own tool, called through the registry
  const roundTrip = await dispatch(registry, "node_reverse", { text: "toolwire ✓ 🚀" });
  const refused = await dispatch(registry, "node_reverse", { text: 42 });
  const servedCalls = provider.served.get("node_reverse") ?? 0;

  // 5. conversions
  const modelTools = await runModelTools(registry, vectors, fixtureTools);
  const own = await registry.toModelTools({
    format: ModelFormat.ANTHROPIC,
    names: ["node_reverse"],
  });
  const stubs = await runStubs(registry, vectors, fixtureTools);

  // 6. the dispatch conformance cases
  const conformance = await runDispatchCases(registry, vectors);

  await provider.close();
  const afterClose = await listNames(registry);

  const checks = {
    provider_accepted: provider.providerId !== "" && stored?.name === "node_reverse",
    provider_tool_listed: listed.includes("node_reverse"),
    fixture_tools_listed: fixtureTools.every((name) => listed.includes(name)),
    python_tool_dispatched: pythonTool.success &&
      sameJson(pythonTool.structured_output, weather as JsonValue),
    provider_tool_dispatched: roundTrip.success &&
      sameJson(
        (roundTrip.structured_output as { reversed?: string } | null)?.reversed,
        "🚀 ✓ eriwloot",
      ),
    provider_arguments_validated_by_registry: !refused.success &&
      refused.error_code === "invalid_arguments" && servedCalls === 1,
    model_tools_match: Object.values(modelTools).every((m) => m.matches),
    stubs_match: stubs.matches,
    conformance_cases_pass: conformance.passed === conformance.total,
    provider_tool_gone_after_close: !afterClose.includes("node_reverse"),
  };
  const report = {
    runtime: `node ${process.version}`,
    target,
    ok: Object.values(checks).every(Boolean),
    checks,
    provider: {
      provider_id: provider.providerId,
      stored_definition: stored === undefined
        ? null
        : { name: stored.name, input_schema: stored.inputSchema ?? null },
      calls_served: servedCalls,
    },
    listed,
    python_tool: pythonTool,
    round_trip: roundTrip,
    refused,
    model_tools: modelTools,
    own_model_tools: JSON.parse(own.toolsJson) as JsonValue,
    stubs,
    conformance,
    after_close: afterClose,
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  return report.ok ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 2;
  },
);
