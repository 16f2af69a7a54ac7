/**
 * The bridge between code running in toolwire's Deno sandbox and the registry.
 *
 * `installBridge` defines the global `__callTool__(name, params)` that the
 * generated stubs call: it dispatches over gRPC-web with the run's token and
 * returns the tool's structured output when there is one (its text otherwise),
 * or throws a `ToolError` carrying the registry's error code.
 */

import { type Interceptor, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { RegistryService } from "../../generated/ts/toolwire/v1/registry_service_pb.ts";
import { ErrorCode } from "../../generated/ts/toolwire/v1/tool_pb.ts";

/** A tool call that failed: `code` is the registry's error code, e.g. "invalid_arguments". */
export class ToolError extends Error {
  constructor(
    readonly tool: string,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ToolError";
  }
}

export interface BridgeOptions {
  /** The registry's HTTP listener, e.g. "http://127.0.0.1:50052". */
  baseUrl: string;
  /** The run's capability token. */
  token: string;
}

export type CallTool = (name: string, params?: Record<string, unknown>) => Promise<unknown>;

/** The error code's name as toolwire's Python side spells it. */
export function errorCodeName(code: ErrorCode): string {
  return (ErrorCode[code] ?? "ERROR_CODE_UNSPECIFIED").replace(/^ERROR_CODE_/, "").toLowerCase();
}

export function createCallTool(options: BridgeOptions): CallTool {
  const bearer: Interceptor = (next) => (request) => {
    request.header.set("authorization", `Bearer ${options.token}`);
    return next(request);
  };
  const client = createClient(
    RegistryService,
    createGrpcWebTransport({ baseUrl: options.baseUrl, interceptors: [bearer] }),
  );
  return async (name, params = {}) => {
    const { result } = await client.dispatch({ name, argumentsJson: JSON.stringify(params) });
    if (result === undefined) {
      throw new ToolError(name, "unspecified", `the registry sent no result for '${name}'`);
    }
    if (!result.success) {
      throw new ToolError(name, errorCodeName(result.errorCode), result.error);
    }
    return result.structuredOutput === undefined
      ? result.output
      : toJson(ValueSchema, result.structuredOutput);
  };
}

/** Define the global `__callTool__` that the generated stubs call. */
export function installBridge(options: BridgeOptions): void {
  (globalThis as { __callTool__?: CallTool }).__callTool__ = createCallTool(options);
}
