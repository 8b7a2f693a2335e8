// zenmode's dashboard: the buttons post their action (with the dashboard's
// header, from this page's origin), and server-sent events bring new calls
// and server changes without reloading the page.
"use strict";

function notice(text, bad) {
  const box = document.getElementById("notice");
  if (!box) return;
  box.textContent = text;
  box.className = bad ? "bad" : "";
}

async function act(button) {
  const server = encodeURIComponent(button.dataset.server);
  const action = button.dataset.action;
  const path = button.dataset.tool
    ? `/dashboard/api/tools/${server}/${encodeURIComponent(button.dataset.tool)}/${action}`
    : `/dashboard/api/servers/${server}/${action}`;
  button.disabled = true;
  try {
    const response = await fetch(path, {
      method: "POST",
      headers: { "x-zenmode-dashboard": "1" },
      credentials: "same-origin",
    });
    const answer = await response.json();
    notice(answer.message, !answer.ok);
    if (answer.ok) setTimeout(() => location.reload(), 600);
  } catch (error) {
    notice(`The action failed: ${error}`, true);
  } finally {
    button.disabled = false;
  }
}

function cell(row, name, text) {
  const td = document.createElement("td");
  td.className = name;
  td.textContent = text;
  row.appendChild(td);
}

function showTimes(root) {
  for (const td of root.querySelectorAll("td.at[data-ms]")) {
    td.textContent = new Date(Number(td.dataset.ms)).toLocaleTimeString();
  }
}

function addCall(call) {
  const body = document.querySelector("#calls tbody");
  if (!body) return;
  const row = document.createElement("tr");
  row.className = "call";
  row.dataset.client = call.client;
  cell(row, "at", new Date(call.at_ms).toLocaleTimeString());
  cell(row, "client", call.client);
  cell(row, "profile", call.profile);
  cell(row, "tool", call.tool);
  cell(row, "mode", call.mode);
  cell(row, "server", call.server);
  cell(row, "duration", `${call.ms} ms`);
  cell(row, "outcome", call.outcome);
  cell(row, "size", `${call.bytes} B`);
  cell(row, "saved", String(call.tokens_saved));
  body.prepend(row);
}

async function refreshServers() {
  const table = document.getElementById("servers");
  if (!table) return;
  const response = await fetch("/dashboard/api/servers", { credentials: "same-origin" });
  if (!response.ok) return;
  for (const server of await response.json()) {
    const row = table.querySelector(`tr[data-server="${CSS.escape(server.name)}"]`);
    if (!row) continue;
    const status = row.querySelector(".status");
    status.textContent = server.state;
    status.className = `status state-${server.state_class}`;
    row.querySelector(".last-error").textContent = server.last_error;
    row.querySelector(".tools").firstChild.textContent = String(server.tools);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  showTimes(document);
  for (const button of document.querySelectorAll("button[data-action]")) {
    button.addEventListener("click", () => act(button));
  }
  const events = new EventSource("/dashboard/events");
  events.addEventListener("call", (event) => addCall(JSON.parse(event.data)));
  events.addEventListener("servers", () => refreshServers());
  // State files change without a gateway event (a server going idle).
  setInterval(refreshServers, 5000);
  events.addEventListener("open", () => { document.body.dataset.live = "1"; });
});
