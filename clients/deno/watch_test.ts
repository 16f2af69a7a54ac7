/**
 * Registry changes and paging over gRPC-web from Deno (Connect-ES): List with
 * page_size=1 pages through the granted tools, and the server-streaming Watch
 * yields SYNCED, then the changes the grant lets the run see.
 *
 * Started by tests/http/test_deno_watch.py, which passes the listener's URL
 * and a run token in the environment, and which changes the registry once
 * this test prints WATCH_MARKER (after SYNCED): it adds a tool the grant
 * refuses and one it permits, then removes both.
 *
 *   TOOLWIRE_URL          the HTTP listener, e.g. http://127.0.0.1:50052
 *   TOOLWIRE_TOKEN        a live run token
 *   TOOLWIRE_VISIBLE      the names the grant lets List show, comma-separated, sorted
 *   TOOLWIRE_WATCH_TOOL   the permitted tool the Python side adds and removes
 */

import { createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import {
  RegistryEventKind,
  RegistryService,
  type WatchResponse,
} from "../../generated/ts/toolwire/v1/registry_service_pb.ts";

/** Printed once the watch is live; the Python side waits for this line. */
const WATCH_MARKER = "TOOLWIRE_WATCH_SYNCED";
/** How long the watch waits for the Python side's changes. */
const WATCH_TIMEOUT_MS = 10_000;

// Small assertions of our own: the standard library would be a remote import
// and node:assert needs @types/node; this test runs offline on node_modules.
function assert(value: unknown, message = "expected a truthy value"): asserts value {
  if (!value) throw new Error(message);
}

/** JSON text; registry versions are uint64, so bigint, and show as e.g. "7n". */
function show(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => typeof v === "bigint" ? `${v}n` : v);
}

function assertEquals(actual: unknown, expected: unknown): void {
  const [a, e] = [show(actual), show(expected)];
  if (a !== e) throw new Error(`expected ${e}, got ${a}`);
}

function env(name: string): string {
  const value = Deno.env.get(name);
  if (!value) {
    throw new Error(`${name} is not set; run this through tests/http/test_deno_watch.py`);
  }
  return value;
}

const bearer: Interceptor = (next) => (request) => {
  request.header.set("authorization", `Bearer ${env("TOOLWIRE_TOKEN")}`);
  return next(request);
};
const registry = createClient(
  RegistryService,
  createGrpcWebTransport({ baseUrl: env("TOOLWIRE_URL"), interceptors: [bearer] }),
);
const visible = env("TOOLWIRE_VISIBLE").split(",");
const watchTool = env("TOOLWIRE_WATCH_TOOL");

Deno.test("List with page_size=1 pages through the granted tools", async () => {
  const names: string[] = [];
  const versions = new Set<bigint>();
  const etags = new Set<string>();
  let pageToken = "";
  let pages = 0;
  do {
    const page = await registry.list({ pageSize: 1, pageToken });
    pages += 1;
    assert(pages <= 100, "paging does not end");
    assert(page.tools.length <= 1, `a page of ${page.tools.length} tools`);
    names.push(...page.tools.map((t) => t.name));
    versions.add(page.registryVersion);
    etags.add(page.etag);
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  assertEquals(names, visible);
  // Nothing changed while paging: one version, one etag, on every page.
  assertEquals(versions.size, 1);
  assertEquals(etags.size, 1);
  assert([...versions][0] > 0n, "registry_version is 0");
  assert([...etags][0] !== "", "the etag is empty");
  // The whole list at once agrees with the pages.
  const all = await registry.list({});
  assertEquals(all.tools.map((t) => t.name), visible);
  assertEquals(all.registryVersion, [...versions][0]);
  assertEquals(all.etag, [...etags][0]);
});

Deno.test("Watch yields SYNCED, then the granted tool's TOOL_ADDED and TOOL_REMOVED", async () => {
  const before = await registry.list({});
  const signal = AbortSignal.timeout(WATCH_TIMEOUT_MS);
  const events: WatchResponse[] = [];
  try {
    for await (const event of registry.watch({}, { signal })) {
      events.push(event);
      if (events.length === 1) {
        assertEquals(RegistryEventKind[event.kind], "SYNCED");
        assert(
          event.registryVersion >= before.registryVersion,
          `SYNCED at ${event.registryVersion}, below List's ${before.registryVersion}`,
        );
        console.log(WATCH_MARKER);
      }
      if (event.kind === RegistryEventKind.TOOL_REMOVED && event.toolName === watchTool) break;
    }
  } catch (error) {
    const seen = events.map((e) => `${RegistryEventKind[e.kind]} ${e.toolName}`);
    throw new Error(`the watch ended early (${error}); saw ${JSON.stringify(seen)}`);
  }
  // The refused tool's events were filtered out by the grant.
  assertEquals(
    events.map((e) => [RegistryEventKind[e.kind], e.toolName]),
    [["SYNCED", ""], ["TOOL_ADDED", watchTool], ["TOOL_REMOVED", watchTool]],
  );
  assertEquals(events[1].definition?.name, watchTool);
  for (let i = 1; i < events.length; i++) {
    assert(
      events[i].registryVersion > events[i - 1].registryVersion,
      `registry_version did not increase: ${events.map((e) => e.registryVersion)}`,
    );
  }
  // After the changes, List shows the same tools at a later version.
  const after = await registry.list({});
  assertEquals(after.tools.map((t) => t.name), visible);
  assert(after.registryVersion >= events[2].registryVersion, "List is behind the watch");
});
