/**
 * toolwire from Node over native gRPC (HTTP/2): a client of the registry, and a
 * provider that serves tools from this process over the `Provide` stream.
 *
 *   const registry = connectRegistry("127.0.0.1:50051");
 *   const { result } = await registry.dispatch({
 *     name: "get_weather",
 *     argumentsJson: '{"location": "Bern"}',
 *   });
 *
 *   const provider = await Provider.start(registry, "my-agent", [myTool]);
 *   // … the registry now sends my tool's calls here …
 *   await provider.close();
 */

import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { fromJson, type JsonValue, type MessageInitShape, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import {
  type CallOrder,
  type ProviderAccepted,
  type ProvideRequestSchema,
  type ProvideResponse,
  RegistryService,
} from "../../../generated/ts/toolwire/v1/registry_service_pb.ts";
import {
  ErrorCode,
  type ToolDefinition,
  type ToolDefinitionSchema,
  type ToolResult,
  type ToolResultSchema,
} from "../../../generated/ts/toolwire/v1/tool_pb.ts";

export type RegistryClient = Client<typeof RegistryService>;

/** A client of the registry at `target` ("host:port"), over gRPC on HTTP/2 without TLS. */
export function connectRegistry(target: string, defaultTimeoutMs = 10_000): RegistryClient {
  const transport = createGrpcTransport({ baseUrl: `http://${target}`, defaultTimeoutMs });
  return createClient(RegistryService, transport);
}

/** The error code's name as toolwire spells it elsewhere, e.g. "invalid_arguments". */
export function errorCodeName(code: ErrorCode): string {
  return (ErrorCode[code] ?? "UNSPECIFIED").replace(/^ERROR_CODE_/, "").toLowerCase();
}

/** The structured output of a result as plain JSON, or undefined. */
export function structuredOutput(result: ToolResult): JsonValue | undefined {
  return result.structuredOutput === undefined
    ? undefined
    : toJson(ValueSchema, result.structuredOutput);
}

export interface CallInfo {
  callId: string;
  /** Aborted when the registry gives up on the call (timeout, caller gone). */
  signal: AbortSignal;
}

/** A tool this process serves: its definition and the function that runs it.
 * The registry validates the arguments against the definition before the call
 * order is sent. A string result is the output; anything else is sent as
 * structured output (and as JSON text). */
export interface NodeTool {
  definition: MessageInitShape<typeof ToolDefinitionSchema>;
  run(args: Record<string, unknown>, call: CallInfo): unknown;
}

type Request = MessageInitShape<typeof ProvideRequestSchema>;

/** An async iterable fed by `push`; the request side of a client stream. */
class Outbox<T> implements AsyncIterable<T> {
  private readonly queue: T[] = [];
  private wake: (() => void) | undefined;
  private closed = false;

  push(item: T): void {
    if (this.closed) return;
    this.queue.push(item);
    this.wake?.();
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      const item = this.queue.shift();
      if (item !== undefined) {
        yield item;
      } else if (this.closed) {
        return;
      } else {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
      }
    }
  }
}

/** One `Provide` stream: the tools live in the registry as long as it is open. */
export class Provider {
  /** Call orders received, by tool name. */
  readonly served = new Map<string, number>();
  private readonly running = new Map<string, AbortController>();
  private readonly tools: Map<string, NodeTool>;
  private readonly outbox = new Outbox<Request>();
  private readonly finished: Promise<void>;
  private accepted: ProviderAccepted | undefined;
  private error: unknown;

  private constructor(
    registry: RegistryClient,
    readonly name: string,
    tools: NodeTool[],
    onAccepted: (error?: unknown) => void,
  ) {
    this.tools = new Map(tools.map((t) => [t.definition.name ?? "", t]));
    this.outbox.push({
      kind: { case: "hello", value: { providerName: name, tools: tools.map((t) => t.definition) } },
    });
    // A stream has no deadline: it lives until we close it.
    const responses = registry.provide(this.outbox, { timeoutMs: 0 });
    this.finished = this.read(responses, onAccepted);
  }

  /** Opens the stream and waits until the registry has registered the tools. */
  static async start(registry: RegistryClient, name: string, tools: NodeTool[]): Promise<Provider> {
    let settle!: (error?: unknown) => void;
    const accepted = new Promise<void>((resolve, reject) => {
      settle = (error) => (error === undefined ? resolve() : reject(error));
    });
    const provider = new Provider(registry, name, tools, settle);
    await accepted;
    return provider;
  }

  get providerId(): string {
    return this.accepted?.providerId ?? "";
  }

  /** The tools as the registry stored them (both schema forms filled in). */
  get definitions(): ToolDefinition[] {
    return this.accepted?.tools ?? [];
  }

  /** Ends the stream; the registry unregisters the tools. Resolves when it
   * has; rejects if the stream broke (the registry went away). */
  async close(): Promise<void> {
    for (const controller of this.running.values()) controller.abort();
    this.outbox.close();
    await this.finished;
    if (this.error !== undefined) throw this.error;
  }

  private async read(
    responses: AsyncIterable<ProvideResponse>,
    onAccepted: (error?: unknown) => void,
  ): Promise<void> {
    try {
      for await (const { kind } of responses) {
        switch (kind.case) {
          case "accepted":
            this.accepted = kind.value;
            onAccepted();
            break;
          case "call":
            void this.serve(kind.value);
            break;
          case "cancelled":
            this.running.get(kind.value.callId)?.abort();
            this.running.delete(kind.value.callId);
            break;
        }
      }
      if (this.accepted === undefined) {
        onAccepted(new Error("the registry ended the Provide stream without accepting"));
      }
    } catch (error) {
      if (this.accepted === undefined) onAccepted(error);
      else this.error = error;
    } finally {
      this.outbox.close();
    }
  }

  private async serve(order: CallOrder): Promise<void> {
    this.served.set(order.name, (this.served.get(order.name) ?? 0) + 1);
    const controller = new AbortController();
    this.running.set(order.callId, controller);
    const result = await this.run(order, controller.signal);
    if (!this.running.delete(order.callId)) return; // cancelled: no outcome is expected
    this.outbox.push({ kind: { case: "outcome", value: { callId: order.callId, result } } });
  }

  private async run(
    order: CallOrder,
    signal: AbortSignal,
  ): Promise<MessageInitShape<typeof ToolResultSchema>> {
    const tool = this.tools.get(order.name);
    if (tool === undefined) {
      return {
        success: false,
        error: `provider '${this.name}' does not serve '${order.name}'`,
        errorCode: ErrorCode.NOT_FOUND,
      };
    }
    try {
      const args = order.argumentsJson ? JSON.parse(order.argumentsJson) : {};
      const value = await tool.run(args as Record<string, unknown>, {
        callId: order.callId,
        signal,
      });
      if (typeof value === "string") return { success: true, output: value };
      if (value === undefined) return { success: true, output: "" };
      return {
        success: true,
        output: JSON.stringify(value),
        structuredOutput: fromJson(ValueSchema, value as JsonValue),
      };
    } catch (error) {
      return {
        success: false,
        error: `'${order.name}' failed: ${error instanceof Error ? error.message : String(error)}`,
        errorCode: ErrorCode.HANDLER_ERROR,
      };
    }
  }
}
