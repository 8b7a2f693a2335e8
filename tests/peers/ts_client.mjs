// zenmode against the official MCP TypeScript SDKs, over StdioClientTransport
// (and the optimized checks again over StreamableHTTPClientTransport):
//   - v1, @modelcontextprotocol/sdk (2025 `initialize` handshake only), and
//   - v2, @modelcontextprotocol/client, three ways: versionNegotiation
//     'legacy' (initialize), 'auto' (probes server/discover) and
//     { pin: '2026-07-28' } (modern era, no fallback).
// Spawns the zenmode binary (env ZENMODE_BIN, default
// <repo>/target/release/zenmode), checks the optimized and the full tool list
// and a few calls. Prints one line per check and `ts-sdk: N passed, M failed`;
// exits non-zero if any check failed.

import { accessSync, constants, readFileSync, readdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import * as v1Client from "@modelcontextprotocol/sdk/client/index.js";
import * as v1Stdio from "@modelcontextprotocol/sdk/client/stdio.js";
import * as v1Http from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import * as v2Client from "@modelcontextprotocol/client";
import * as v2Stdio from "@modelcontextprotocol/client/stdio";

const MODERN = "2026-07-28";
// Each flavor: the SDK's Client and stdio transport, client options, and
// whether the connection is expected to end up in the modern (2026-07-28) era.
const FLAVORS = [
  { tag: "sdk-v1", Client: v1Client.Client, stdio: v1Stdio, options: {}, modern: false },
  { tag: "v2 legacy", Client: v2Client.Client, stdio: v2Stdio, options: { versionNegotiation: { mode: "legacy" } }, modern: false },
  { tag: "v2 auto", Client: v2Client.Client, stdio: v2Stdio, options: { versionNegotiation: { mode: "auto" } }, modern: true },
  { tag: "v2 pin", Client: v2Client.Client, stdio: v2Stdio, options: { versionNegotiation: { mode: { pin: MODERN } } }, modern: true },
];

const here = dirname(fileURLToPath(import.meta.url));
// The built-in modes: one manifest each under modes/ (the --full list).
const BUILTIN_MODES = readdirSync(resolve(here, "../../modes")).filter((f) => f.endsWith(".json")).length;
const repo = resolve(here, "..", "..");
const ZENMODE_BIN = process.env.ZENMODE_BIN || resolve(repo, "target", "release", "zenmode");
const CALL_TIMEOUT_MS = 20_000;
const TASK = "the checkout page crashes with a TypeError after the last deploy";
const PLAN_TASK = "plan the migration of our billing monolith to services, step by step";

let passed = 0;
let failed = 0;

function assert(cond, msg) {
  if (!cond) throw new Error(`assertion: ${msg}`);
}

async function check(name, fn) {
  let timer;
  try {
    await Promise.race([
      fn(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${CALL_TIMEOUT_MS} ms`)), CALL_TIMEOUT_MS);
      }),
    ]);
    passed++;
    console.log(`  ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`  FAIL ${name} -- ${e?.message ?? e}`);
  } finally {
    clearTimeout(timer);
  }
}

function structured(result) {
  const sc = result.structuredContent;
  assert(sc && typeof sc === "object", `structuredContent missing: ${JSON.stringify(result)}`);
  const text = result.content?.find((c) => c.type === "text")?.text;
  assert(typeof text === "string", "no text content block");
  assert(JSON.stringify(JSON.parse(text)) === JSON.stringify(sc), "text content differs from structuredContent");
  return sc;
}

async function connect(flavor, args) {
  if (flavor.url) {
    // Streamable HTTP to a running `serve --transport http` (its own args).
    const Http = flavor.tag.startsWith("sdk-v1") ? v1Http : v2Client;
    const transport = new Http.StreamableHTTPClientTransport(new URL(flavor.url));
    const client = new flavor.Client({ name: "zenmode-peer-test", version: "0.0.0" }, flavor.options);
    await client.connect(transport, { timeout: CALL_TIMEOUT_MS });
    return { client };
  }
  const transport = new flavor.stdio.StdioClientTransport({
    command: ZENMODE_BIN,
    args: ["serve", ...args],
    env: { ...flavor.stdio.getDefaultEnvironment(), RUST_LOG: "error" },
    stderr: "inherit",
  });
  const client = new flavor.Client({ name: "zenmode-peer-test", version: "0.0.0" }, flavor.options);
  await client.connect(transport, { timeout: CALL_TIMEOUT_MS });
  return { client };
}

async function optimized(flavor) {
  const { client } = await connect(flavor, []);
  const tag = `[${flavor.tag}] `;
  try {
    if (client.getNegotiatedProtocolVersion) {
      const version = client.getNegotiatedProtocolVersion();
      console.log(`  ${flavor.tag}: negotiated protocol ${version}`);
      await check(tag + `negotiates the ${flavor.modern ? "modern" : "2025"} era`, async () => {
        assert((version === MODERN) === flavor.modern, `negotiated ${version}`);
      });
    }
    await check(tag + "server version names zenmode", async () => {
      const v = client.getServerVersion();
      assert(v?.name === "zenmode", `serverInfo=${JSON.stringify(v)}`);
      assert(client.getServerCapabilities()?.tools, "no tools capability");
    });

    await check(tag + "tools/list is exactly zen_select_mode + zen_execute", async () => {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name).sort();
      assert(JSON.stringify(names) === JSON.stringify(["zen_execute", "zen_select_mode"]), `tools=${names}`);
      for (const t of tools) assert(t.inputSchema?.type === "object", `${t.name} inputSchema`);
    });

    await check(tag + "zen_select_mode recommends debug with required/next_call", async () => {
      const r = await client.callTool({ name: "zen_select_mode", arguments: { task_description: TASK } });
      assert(!r.isError, `isError: ${JSON.stringify(r.content)}`);
      const sc = structured(r);
      for (const k of ["mode", "confidence", "required", "next_call"]) assert(k in sc, `missing ${k}`);
      assert(typeof sc.confidence === "number" && sc.confidence >= 0 && sc.confidence <= 1, `confidence=${sc.confidence}`);
      assert(sc.mode === "debug", `mode=${sc.mode}`);
      assert(sc.next_call.tool === "zen_execute" && sc.next_call.arguments.mode === "debug", JSON.stringify(sc.next_call));
    });

    await check(tag + "next_call from zen_select_mode (planner) runs as-is", async () => {
      const r = await client.callTool({ name: "zen_select_mode", arguments: { task_description: PLAN_TASK } });
      const sc = structured(r);
      assert(sc.mode === "planner", `mode=${sc.mode}`);
      const r2 = await client.callTool({ name: sc.next_call.tool, arguments: sc.next_call.arguments });
      assert(!r2.isError, `next_call rejected: ${JSON.stringify(r2.structuredContent)}`);
    });

    await check(tag + "zen_execute challenge -> challenge_accepted", async () => {
      const r = await client.callTool({
        name: "zen_execute",
        arguments: { mode: "challenge", request: { prompt: "Rewriting the service in Rust will fix the outage" } },
      });
      assert(!r.isError, `isError: ${JSON.stringify(r.content)}`);
      assert(structured(r).status === "challenge_accepted", JSON.stringify(r.structuredContent));
    });

    await check(tag + "zen_execute unknown mode 'debgu' -> isError, closest has debug", async () => {
      const r = await client.callTool({ name: "zen_execute", arguments: { mode: "debgu", request: {} } });
      assert(r.isError === true, `expected isError: ${JSON.stringify(r.structuredContent)}`);
      const closest = structured(r).closest;
      assert(Array.isArray(closest) && closest.includes("debug"), `closest=${JSON.stringify(closest)}`);
    });

    await check(tag + "zen_execute debug {step:1} -> isError with violations", async () => {
      const r = await client.callTool({ name: "zen_execute", arguments: { mode: "debug", request: { step: 1 } } });
      assert(r.isError === true, `expected isError: ${JSON.stringify(r.structuredContent)}`);
      const v = structured(r).violations;
      assert(Array.isArray(v) && v.length > 0, `violations=${JSON.stringify(v)}`);
    });

    await check(tag + "unlisted mode tool 'challenge' callable by name", async () => {
      const r = await client.callTool({ name: "challenge", arguments: { prompt: "tabs are better than spaces" } });
      assert(!r.isError, `isError: ${JSON.stringify(r.content)}`);
      assert(structured(r).status === "challenge_accepted", JSON.stringify(r.structuredContent));
    });

    await check(tag + "unknown tool -> JSON-RPC error -32602", async () => {
      let r;
      try {
        r = await client.callTool({ name: "no_such_tool", arguments: {} });
      } catch (e) {
        assert(e.code === -32602, `code=${e.code} ${e.message}`);
        return;
      }
      assert(r.isError === true, `unknown tool accepted: ${JSON.stringify(r)}`);
    });

    if (!flavor.modern) {
      // ping is gone from the 2026-07-28 protocol.
      await check(tag + "ping", async () => {
        await client.ping();
      });
    }
  } finally {
    await client.close();
  }
}

async function full(flavor) {
  const { client } = await connect(flavor, ["--full"]);
  const tag = `[${flavor.tag} --full] `;
  try {
    await check(tag + `tools/list has ${BUILTIN_MODES} modes with inputSchema`, async () => {
      const { tools } = await client.listTools();
      const names = new Set(tools.map((t) => t.name));
      assert(tools.length === BUILTIN_MODES, `${tools.length} tools: ${[...names].sort()}`);
      for (const n of ["debug", "codereview", "challenge", "version"]) assert(names.has(n), `missing ${n}`);
      for (const t of tools) {
        assert(t.inputSchema?.type === "object", `${t.name} inputSchema`);
        assert(t.description, `${t.name} has no description`);
      }
    });

    await check(tag + "call version", async () => {
      const r = await client.callTool({ name: "version", arguments: {} });
      assert(!r.isError, `isError: ${JSON.stringify(r.content)}`);
      structured(r);
    });

    await check(tag + "call planner step 1", async () => {
      const r = await client.callTool({
        name: "planner",
        arguments: { step: "Goal: split billing out of the monolith", step_number: 1, total_steps: 3, next_step_required: true },
      });
      assert(!r.isError, `isError: ${JSON.stringify(r.structuredContent)}`);
    });
  } finally {
    await client.close();
  }
}

// Resolves when the client receives notifications/tools/list_changed,
// whether or not the SDK registered a handler of its own for it.
function watchListChanged(client) {
  const method = "notifications/tools/list_changed";
  let seen;
  const promise = new Promise((resolve) => (seen = resolve));
  const fallback = client.fallbackNotificationHandler;
  client.fallbackNotificationHandler = async (n) => {
    if (n.method === method) seen();
    return fallback?.(n);
  };
  const handlers = client._notificationHandlers;
  const own = handlers?.get?.(method);
  if (own) {
    handlers.set(method, async (n, extra) => {
      seen();
      return own(n, extra);
    });
  }
  return promise;
}

// A strategy whose list changes (2025 sessions only): the SDK is told, and re-lists.
function dynamic(strategy, change, appears) {
  const suite = async (flavor) => {
    if (flavor.modern) return;
    const { client } = await connect(flavor, ["--strategy", strategy]);
    const tag = `[${flavor.tag} --strategy ${strategy}] `;
    try {
      const changed = watchListChanged(client);
      await check(tag + `${appears} is not listed at first`, async () => {
        const { tools } = await client.listTools();
        assert(!tools.some((t) => t.name === appears), `listed early: ${tools.map((t) => t.name)}`);
      });
      await check(tag + `${change.name} sends notifications/tools/list_changed`, async () => {
        const r = await client.callTool(change);
        assert(!r.isError, `isError: ${JSON.stringify(r.structuredContent)}`);
        await changed;
      });
      await check(tag + `re-listing shows ${appears}, and it runs`, async () => {
        const { tools } = await client.listTools();
        assert(tools.some((t) => t.name === appears), `missing: ${tools.map((t) => t.name)}`);
        const r = await client.callTool({ name: appears, arguments: { prompt: "the build is fine" } });
        assert(!r.isError, `isError: ${JSON.stringify(r.structuredContent)}`);
      });
    } finally {
      await client.close();
    }
  };
  Object.defineProperty(suite, "name", { value: `dynamic ${strategy}` });
  return suite;
}

const lazySuite = dynamic("lazy", { name: "manage_tools", arguments: { action: "enable", names: ["challenge"] } }, "challenge");
const groupsSuite = dynamic("groups", { name: "activate_utility", arguments: {} }, "challenge");

// One call per design document (../shared/seeds), as the document writes it.
function jsonOf(result) {
  if (result.structuredContent && typeof result.structuredContent === "object") return result.structuredContent;
  return JSON.parse(result.content.find((c) => c.type === "text").text);
}

async function seedsSuite(flavor) {
  const calls = [
    ["000", ["--strategy", "lazy"], "manage_tools", { action: "enable", tools: ["challenge"] },
      (b) => b.enabled.includes("challenge")],
    ["001", ["--strategy", "categories"], "list_tool_categories", {},
      (b) => b.some((c) => c.category === "workflow" && c.toolCount > 0)],
    ["002", ["--strategy", "groups"], "activate_utility", {}, (b) => b.group === "utility"],
    ["003", ["--strategy", "discover", "--tool-prefix", "afd-"], "afd-detail", { command: "chat" },
      (b) => b.success === true && b.data[0].found === true],
    ["004", [], "zen_select_mode", { task_description: "Debug OAuth token persistence issue", confidence_level: "exploring" },
      (b) => b.recommended_mode === "debug" && b.required_fields.includes("step")],
  ];
  for (const [doc, args, tool, args2, expect] of calls) {
    const { client } = await connect(flavor, args);
    try {
      await check(`[${flavor.tag}] [design ${doc}] ${tool} ${JSON.stringify(args2)}`, async () => {
        const r = await client.callTool({ name: tool, arguments: args2 });
        assert(!r.isError, `isError: ${JSON.stringify(r.content)}`);
        const body = jsonOf(r);
        assert(expect(body), JSON.stringify(body));
      });
    } finally {
      await client.close();
    }
  }
}
Object.defineProperty(seedsSuite, "name", { value: "design documents" });

// `zenmode serve --transport http` on a free loopback port; resolves with
// its /mcp URL once it prints the address it listens on.
function startHttpServer() {
  const child = spawn(ZENMODE_BIN, ["serve", "--transport", "http", "--listen", "127.0.0.1:0"], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, RUST_LOG: "error" },
  });
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error("the http server printed no address")), CALL_TIMEOUT_MS);
    createInterface({ input: child.stderr }).on("line", (line) => {
      const found = line.match(/^zenmode: listening on (\S+)/);
      if (found) {
        clearTimeout(timer);
        resolvePromise({ process: child, url: `http://${found[1]}/mcp` });
      }
    });
    child.on("exit", (code) => reject(new Error(`the http server exited (${code})`)));
  });
}

// A script's large answer comes back as a result handle: a resource_link
// whose resource reads back, page by page, as the answer's JSON.
async function handlesSuite(flavor) {
  const { client } = await connect(flavor, []);
  const tag = `[${flavor.tag}] `;
  try {
    await check(tag + "a large result comes back as a resource_link whose pages read back whole", async () => {
      // About 60 KB: over the 16 KiB threshold and under a script's 64 KiB, two pages of 32 KiB.
      const code = "return Array.from({length: 6000}, (_, i) => 'item ' + String(i).padStart(4, '0')).join(';');";
      const expected = Array.from({ length: 6000 }, (_, i) => "item " + String(i).padStart(4, "0")).join(";");
      const r = await client.callTool({ name: "zen_execute", arguments: { mode: "script", request: { code } } });
      assert(!r.isError, `isError: ${JSON.stringify(r.content)}`);
      assert(JSON.stringify(r).length <= 2048, `the handle reply takes ${JSON.stringify(r).length} bytes`);
      const links = r.content.filter((c) => c.type === "resource_link");
      assert(links.length === 1, `resource_link blocks: ${JSON.stringify(r.content)}`);
      const uri = links[0].uri;
      assert(uri.startsWith("zenmode://results/"), uri);
      assert(r.structuredContent === undefined, JSON.stringify(r.structuredContent));
      const page1 = (await client.readResource({ uri })).contents[0];
      const pages = page1._meta?.["zenmode/page"]?.pages;
      assert(pages === 2, `pages=${pages}`);
      const first = page1.text;
      const second = (await client.readResource({ uri: `${uri}?page=2` })).contents[0].text;
      const answer = JSON.parse(first + second);
      assert(answer.result === expected, `the pages hold ${JSON.stringify(answer).slice(0, 200)}`);
      let refused = false;
      try {
        await client.readResource({ uri: `${uri}?page=3` });
      } catch {
        refused = true;
      }
      assert(refused, "page 3 of 2 was read");
    });
  } finally {
    await client.close();
  }
}

async function main() {
  try {
    accessSync(ZENMODE_BIN, constants.X_OK);
  } catch {
    console.error(`ts-sdk: zenmode binary not found at ${ZENMODE_BIN}`);
    console.log("ts-sdk: 0 passed, 1 failed");
    process.exit(1);
  }
  const version = (pkg) =>
    JSON.parse(readFileSync(resolve(here, "node_modules", pkg, "package.json"), "utf8")).version;
  console.log(
    `ts-sdk: @modelcontextprotocol/sdk ${version("@modelcontextprotocol/sdk")}, ` +
      `@modelcontextprotocol/client ${version("@modelcontextprotocol/client")} against ${ZENMODE_BIN}`,
  );
  for (const flavor of FLAVORS) {
    for (const suite of [optimized, full, lazySuite, groupsSuite, seedsSuite, handlesSuite]) {
      try {
        await suite(flavor);
      } catch (e) {
        failed++;
        console.log(`  FAIL [${flavor.tag}] ${suite.name} session -- ${e?.stack ?? e}`);
      }
    }
  }
  // The optimized suite again over Streamable HTTP, every flavor.
  const server = await startHttpServer();
  try {
    for (const flavor of FLAVORS) {
      const overHttp = { ...flavor, tag: `${flavor.tag} http`, url: server.url };
      try {
        await optimized(overHttp);
      } catch (e) {
        failed++;
        console.log(`  FAIL [${overHttp.tag}] optimized session -- ${e?.stack ?? e}`);
      }
    }
  } finally {
    server.process.kill();
  }
  console.log(`ts-sdk: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}

await main();
