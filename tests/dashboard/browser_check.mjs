// zenmode's dashboard in headless Chromium (playwright-core over the
// DevTools protocol), against a real shared instance:
// - sign-in with the one-time link `zenmode dashboard` prints, and the
//   link refused a second time;
// - the servers page with a running server and a failing one;
// - a quarantined tool approved with its button, after the same request
//   from a page of another origin was refused and changed nothing;
// - a call made by a client appearing on the calls page without a reload.
// Screenshots of each page go to $SCREENSHOTS.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync, mkdirSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const BIN = process.env.ZENMODE_BIN;
const SHOTS = process.env.SCREENSHOTS;
const FAULT = process.env.FAULT_SERVER;
const TIMEOUT = 20_000;
mkdirSync(SHOTS, { recursive: true });

function check(condition, message) {
  if (!condition) throw new Error(`dashboard check failed: ${message}`);
  console.log(`ok: ${message}`);
}

// An isolated zenmode: its own config, cache and state folders.
const dir = mkdtempSync(join(tmpdir(), "zenmode-dashboard-"));
const upstreams = join(dir, "upstreams.json");
const toolsFile = join(dir, "alpha-tools.json");
const env = {
  ...process.env,
  ZEN_CONFIG_DIR: join(dir, "config"),
  ZEN_CACHE_DIR: join(dir, "cache"),
  ZEN_STATE_DIR: join(dir, "state"),
  ZEN_UPSTREAMS: upstreams,
  ZEN_EMBEDDING_MODEL: "none",
  ZEN_STORE: "memory:",
  RUST_LOG: "info",
};
const echo = {
  name: "echo",
  description: "Echo the text back.",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  annotations: { readOnlyHint: true },
};
const shout = {
  name: "shout",
  description: "Say the text loudly to everyone in the room.",
  inputSchema: { type: "object", properties: { text: { type: "string" } } },
};
writeFileSync(toolsFile, JSON.stringify([echo]));
writeFileSync(
  upstreams,
  JSON.stringify({
    mcpServers: {
      alpha: { command: "python3", args: [FAULT, "--tools-file", toolsFile] },
      broken: { command: "python3", args: [FAULT, "--exit-at-start"] },
    },
  }),
);
const zenmode = (...args) => execFileSync(BIN, args, { env, stdio: ["ignore", "pipe", "inherit"] }).toString();
zenmode("profile", "add", "work", "alpha", "broken");

// A client as Claude Code would start it: `zenmode connect --profile work`.
const client = spawn(BIN, ["connect", "--profile", "work", "--idle-stop-secs", "120"], {
  env,
  stdio: ["pipe", "pipe", "inherit"],
});
const waiting = new Map();
createInterface({ input: client.stdout }).on("line", (line) => {
  const message = JSON.parse(line);
  if (message.id !== undefined && waiting.has(message.id)) {
    waiting.get(message.id)(message);
    waiting.delete(message.id);
  }
});
let nextId = 1;
function request(method, params) {
  const id = nextId++;
  client.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
  return new Promise((resolve, reject) => {
    waiting.set(id, resolve);
    setTimeout(() => reject(new Error(`no answer to ${method}`)), TIMEOUT);
  });
}
const execute = (mode, req) => request("tools/call", { name: "zen_execute", arguments: { mode, request: req } });

let browser;
let other;
try {
  await request("initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "claude-code", version: "1" },
  });
  client.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
  const first = await execute("alpha__echo", { text: "first" });
  check(first.result?.content?.[0]?.text === "first", "a client calls through the shared instance");
  await execute("broken__echo", { text: "x" });

  // alpha gains a tool after its approval: it is quarantined until approved.
  writeFileSync(toolsFile, JSON.stringify([echo, shout]));
  zenmode("upstream", "refresh", "alpha");
  const instance = JSON.parse(readFileSync(join(dir, "state/shared/instance.json"), "utf8"));
  const token = readFileSync(join(dir, "state/shared/token"), "utf8").trim();
  const base = `http://127.0.0.1:${instance.port}/dashboard`;
  const restarted = await fetch(`${base}/api/servers/alpha/restart`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
  });
  check(restarted.ok, "the instance opens alpha again with its new tool list");
  const second = await execute("alpha__echo", { text: "second" });
  check(second.result?.content?.[0]?.text === "second", "alpha runs again");

  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);

  // Sign-in.
  const link = zenmode("dashboard", "--no-open").split("\n")[0];
  await page.goto(base + "/");
  check((await page.textContent("#message")).includes("zenmode dashboard"), "without sign-in the page says how to sign in");
  await page.goto(link);
  check(page.url() === `${base}/`, "the sign-in link leads to the servers page");
  const again = await context.newPage();
  const reused = await again.goto(link);
  check(reused.status() === 403, "the sign-in link works once");
  await again.close();

  // Servers: one running, one failing.
  const alphaState = (await page.textContent('tr[data-server="alpha"] .status')).trim();
  check(alphaState === "running", "the running server is shown running");
  await page.waitForFunction(
    () => document.querySelector('tr[data-server="broken"] .status')?.textContent.trim() === "failed",
  );
  const lastError = await page.textContent('tr[data-server="broken"] .last-error');
  check(lastError.includes("refusing to start") || lastError.includes("handshake"), "the failing server's last error is shown");
  check((await page.textContent('tr[data-server="broken"] pre.log')).includes("refusing to start"), "its log tail is shown");
  const html = await page.content();
  check(!html.includes(token), "the page holds no token");
  await page.screenshot({ path: join(SHOTS, "servers.png"), fullPage: true });

  // Tools: shout is quarantined.
  await page.goto(`${base}/tools`);
  const held = 'section[data-server="alpha"] table.quarantined tr[data-tool="shout"]';
  check(await page.isVisible(held), "the new tool is listed as quarantined");
  await page.screenshot({ path: join(SHOTS, "tools-quarantined.png"), fullPage: true });

  // The same approval from a page of another origin is refused.
  const evil = createServer((_, response) => {
    response.writeHead(200, { "content-type": "text/html" });
    response.end("<!doctype html><title>elsewhere</title><p>another site</p>");
  });
  await new Promise((resolve) => evil.listen(0, "127.0.0.1", resolve));
  other = evil;
  const evilPage = await context.newPage();
  await evilPage.goto(`http://localhost:${evil.address().port}/`);
  const target = `${base}/api/tools/alpha/shout/approve`;
  const attempts = await evilPage.evaluate(async (url) => {
    const outcomes = [];
    for (const init of [
      { method: "POST", credentials: "include", headers: { "x-zenmode-dashboard": "1" } },
      { method: "POST", credentials: "include", mode: "no-cors" },
    ]) {
      try {
        const response = await fetch(url, init);
        outcomes.push(`answered ${response.status} ${response.type}`);
      } catch (error) {
        outcomes.push(`blocked ${error}`);
      }
    }
    return outcomes;
  }, target);
  console.log(`other origin: ${attempts.join("; ")}`);
  check(!attempts.some((outcome) => outcome.startsWith("answered 200 basic")), "another origin's request got no answer it can read");
  await page.reload();
  check(await page.isVisible(held), "another origin's request changed nothing");
  await evilPage.close();

  // Approved from the dashboard itself.
  await page.click(`${held} button[data-action="approve"]`);
  await page.waitForFunction(() => document.getElementById("notice").textContent.includes("approved"));
  await page.waitForSelector('section[data-server="alpha"] table.approved tr[data-tool="shout"]');
  check(!(await page.isVisible(held)), "the approved tool left the quarantine");
  await page.screenshot({ path: join(SHOTS, "tools-approved.png"), fullPage: true });

  // A call appears live.
  await page.goto(`${base}/calls`);
  await page.waitForSelector('body[data-live="1"]');
  const before = await page.locator("#calls tbody tr.call").count();
  const live = await execute("alpha__echo", { text: "live call" });
  check(live.result?.content?.[0]?.text === "live call", "the client's call ran");
  await page.waitForFunction((count) => document.querySelectorAll("#calls tbody tr.call").length > count, before);
  const newest = await page.textContent("#calls tbody tr.call:first-child .mode");
  const who = await page.textContent("#calls tbody tr.call:first-child .client");
  check(newest === "alpha__echo" && who === "claude-code", "the call appeared without a reload, with its client");
  await page.screenshot({ path: join(SHOTS, "calls.png"), fullPage: true });
  console.log(`dashboard: all checks passed; screenshots in ${SHOTS}`);
} finally {
  if (browser) await browser.close();
  if (other) other.close();
  client.stdin.end();
  try {
    execFileSync(BIN, ["connect", "--stop"], { env, stdio: "inherit" });
  } catch {
    // Already stopped.
  }
}
