// The Tackle console: plain DOM, no framework. Everything it shows comes from this server's
// API with the token the person logs in with. Text from the API (tool output, model text,
// previews) is only ever set as textContent, never parsed as HTML, so it cannot run.
"use strict";

(() => {
  const TOKEN_KEY = "tackle.console.token";
  const $ = (id) => document.getElementById(id);

  // ---- DOM helpers ----------------------------------------------------------------------

  /** An element with a class and children; strings become text nodes. */
  function el(tag, className, ...children) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function show(node, text) {
    node.textContent = text || "";
    node.hidden = !text;
  }

  function time(rfc3339) {
    if (!rfc3339) return "—";
    const t = new Date(rfc3339);
    return Number.isNaN(t.getTime()) ? String(rfc3339) : t.toLocaleString();
  }

  function secondsUntil(rfc3339) {
    const t = new Date(rfc3339).getTime();
    return Number.isNaN(t) ? null : Math.round((t - Date.now()) / 1000);
  }

  // ---- the API ---------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, kind, message) {
      super(message);
      this.status = status;
      this.kind = kind;
    }
  }

  const token = () => sessionStorage.getItem(TOKEN_KEY) || "";

  /** A same-origin request with the token; the JSON body, or an ApiError with the API's message. */
  async function api(method, path, body) {
    const init = {
      method,
      headers: { Authorization: "Bearer " + token() },
      cache: "no-store",
      credentials: "omit",
      redirect: "error",
    };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, init);
    } catch (e) {
      throw new ApiError(0, "failed", "cannot reach the server: " + e.message);
    }
    const data = await res.json().catch(() => null);
    if (!res.ok) {
      const err = (data && data.error) || {};
      const failure = new ApiError(res.status, err.kind || "failed", err.message || "HTTP " + res.status);
      if (res.status === 401) logout(failure.message);
      throw failure;
    }
    return data;
  }

  /** Shows a section's error; a refused token (401) has already sent the person to log in. */
  function report(node, e) {
    show(node, e.status ? e.message + " (HTTP " + e.status + ")" : e.message);
  }

  // ---- login -----------------------------------------------------------------------------

  const timers = [];
  let live = null;

  /** Runs fn now and every ms while the tab is visible; the timer, to stop it. */
  function every(ms, fn) {
    fn();
    const timer = setInterval(() => {
      if (!document.hidden) fn();
    }, ms);
    timers.push(timer);
    return timer;
  }

  function logout(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    timers.splice(0).forEach(clearInterval);
    if (live) live.stop();
    live = null;
    $("app").hidden = true;
    $("tabs").hidden = true;
    $("logout").hidden = true;
    $("login").hidden = false;
    $("approval-list").replaceChildren();
    $("answered-list").replaceChildren();
    cards.clear();
    adminRefused = false;
    show($("login-error"), message);
  }

  /** Checks the token against what it should read; refused everywhere, it is not let in. */
  async function login() {
    const probes = await Promise.allSettled([api("GET", "/v1/approvals"), api("GET", "/v1/sessions?limit=1")]);
    const refused = probes.filter((p) => p.status === "rejected").map((p) => p.reason);
    if (refused.length === probes.length) {
      logout(refused[0].message);
      return;
    }
    if (!token()) return;
    show($("login-error"), "");
    $("login").hidden = true;
    $("app").hidden = false;
    $("tabs").hidden = false;
    $("logout").hidden = false;
    await detectEvents();
    approvalsTimer = every(3000, refreshApprovals);
    // The tab's count says a channel is failing whichever tab is open.
    every(15000, refreshChannels);
    // So is a decoy credential caught leaving.
    every(15000, refreshSecurity);
    select("approvals");
  }

  // ---- tabs ------------------------------------------------------------------------------

  function select(name) {
    for (const panel of document.querySelectorAll("[data-panel]")) panel.hidden = panel.id !== name;
    for (const tab of document.querySelectorAll("[data-tab]")) {
      tab.classList.toggle("active", tab.dataset.tab === name);
    }
    if (name === "sessions") {
      refreshSessions();
      if (!live) openLive(null);
    }
    if (name === "audit") refreshAudit();
    if (name === "schedules") refreshSchedules();
    if (name === "channels") refreshChannels();
    if (name === "mcp") refreshMcp();
    if (name === "security") refreshSecurity();
  }

  // ---- approvals -------------------------------------------------------------------------

  const cards = new Map();
  let approvalsTimer = null;

  async function refreshApprovals() {
    let list;
    try {
      list = await api("GET", "/v1/approvals");
    } catch (e) {
      report($("approvals-error"), e);
      // A token without the `approve` scope will not get it by asking every second.
      if (e.status === 403) clearInterval(approvalsTimer);
      return;
    }
    show($("approvals-error"), "");
    const pending = list.approvals.filter((a) => a.status === "pending");
    const seen = new Set();
    for (const a of pending) {
      seen.add(a.id);
      if (!cards.has(a.id)) {
        const card = approvalCard(a);
        cards.set(a.id, card);
        $("approval-list").append(card.node);
      }
      cards.get(a.id).tick();
    }
    // Gone from the queue without an answer from here: answered elsewhere or expired.
    for (const [id, card] of cards) {
      if (!seen.has(id) && !card.answering) {
        card.node.remove();
        cards.delete(id);
      }
    }
    syncCount();
  }

  function syncCount() {
    $("approvals-empty").hidden = cards.size > 0;
    $("pending-count").textContent = cards.size ? String(cards.size) : "";
  }

  function approvalCard(a) {
    const deadline = el("span", "deadline");
    const result = el("p", "result");
    result.hidden = true;
    const buttons = el("div", "buttons");
    const node = el(
      "li",
      "card",
      el(
        "dl",
        "facts",
        el("dt", null, "Tool"), el("dd", "tool", a.tool),
        el("dt", null, "Agent"), el("dd", null, a.agent),
        el("dt", null, "Session"), el("dd", "mono", a.session),
        el("dt", null, "Deadline"), el("dd", null, time(a.deadline) + " ", deadline),
        el("dt", null, "Id"), el("dd", "mono", a.id),
      ),
      el("pre", "preview", a.preview),
      buttons,
      result,
    );
    node.dataset.approval = a.id;
    const card = {
      node,
      deadline,
      answering: false,
      tick() {
        const left = secondsUntil(a.deadline);
        deadline.textContent = left === null ? "" : left > 0 ? "(" + left + " s left)" : "(expired)";
      },
    };
    const choices = [
      ["allow", "Allow", "allow"],
      ["allow_for_session", "Allow for session", "allow"],
      ["deny", "Deny", "deny"],
    ];
    for (const [answer, label, style] of choices) {
      const b = el("button", style, label);
      b.type = "button";
      b.dataset.answer = answer;
      b.addEventListener("click", () => answerApproval(a, answer, card, buttons, result));
      buttons.append(b);
    }
    return card;
  }

  async function answerApproval(a, answer, card, buttons, result) {
    card.answering = true;
    for (const b of buttons.children) b.disabled = true;
    let text;
    let status = 200;
    try {
      const settled = await api("POST", "/v1/approvals/" + encodeURIComponent(a.id), { answer });
      text = settled.status.replace(/_/g, " ") + (settled.answered_by ? " by " + settled.answered_by : "");
    } catch (e) {
      status = e.status;
      text = e.message + (e.status ? " (HTTP " + e.status + ")" : "");
    }
    result.textContent = text;
    result.className = status === 200 ? "result ok" : "result error";
    result.hidden = false;
    // Answered (here or, 409, elsewhere) or gone (404): settled, it moves to the answered
    // list. Any other failure (a refused Origin, the rate limit, no connection) may be retried.
    if (status !== 200 && status !== 409 && status !== 404) {
      card.answering = false;
      for (const b of buttons.children) b.disabled = false;
      return;
    }
    buttons.remove();
    cards.delete(a.id);
    syncCount();
    card.deadline.remove();
    card.node.classList.add("settled");
    $("answered-list").prepend(card.node);
  }

  // ---- sessions and the live view ---------------------------------------------------------

  let eventsEndpoints = false;

  /** Whether this server streams agent events (GET /v1/events); the public OpenAPI document says. */
  async function detectEvents() {
    try {
      const res = await fetch("/openapi.json", { cache: "no-store", credentials: "omit" });
      const doc = await res.json();
      eventsEndpoints = Boolean(doc.paths && doc.paths["/v1/events"] && doc.paths["/v1/sessions/{id}/events"]);
    } catch {
      eventsEndpoints = false;
    }
  }

  async function refreshSessions() {
    let list;
    try {
      list = await api("GET", "/v1/sessions?limit=100");
    } catch (e) {
      report($("sessions-error"), e);
      return;
    }
    show($("sessions-error"), "");
    const items = list.sessions.map((s) => {
      const item = el(
        "li",
        "session",
        el("span", "mono", s.id),
        el("span", "muted", " " + s.agent + " · " + s.messages + " messages · " + time(s.updated_at)),
        s.first_user_message ? el("div", "first", s.first_user_message) : null,
      );
      item.tabIndex = 0;
      item.dataset.session = s.id;
      item.addEventListener("click", () => openSession(s.id));
      item.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter") openSession(s.id);
      });
      return item;
    });
    const all = el("li", "session", el("span", null, "Live: every session"));
    all.tabIndex = 0;
    all.addEventListener("click", () => openLive(null));
    $("session-list").replaceChildren(all, ...items);
  }

  function openSession(id) {
    for (const item of document.querySelectorAll("#session-list [data-session]")) {
      item.classList.toggle("active", item.dataset.session === id);
    }
    openLive(id);
  }

  /** The live view of one session (its stored entries, then what happens next) or of every one. */
  function openLive(id) {
    if (live) live.stop();
    $("session-title").textContent = id ? "Session " + id : "Live: every session";
    $("session-entries").replaceChildren();
    $("live").replaceChildren();
    delete $("live").dataset.state;
    if (eventsEndpoints) {
      show($("live-note"), "Live: text and tool calls appear as they happen.");
      if (id) loadEntries(id);
      const path = id ? "/v1/sessions/" + encodeURIComponent(id) + "/events" : "/v1/events";
      live = streamEvents(path, $("live"));
    } else if (id) {
      show($("live-note"), "This server has no event stream; the session is re-read every 2 s.");
      loadEntries(id);
      const timer = setInterval(() => {
        if (!document.hidden) loadEntries(id);
      }, 2000);
      live = { stop: () => clearInterval(timer) };
    } else {
      show($("live-note"), "This server has no event stream; pick a session to read it.");
      live = { stop() {} };
    }
  }

  async function loadEntries(id) {
    let detail;
    try {
      detail = await api("GET", "/v1/sessions/" + encodeURIComponent(id));
    } catch (e) {
      report($("sessions-error"), e);
      return;
    }
    const names = new Map();
    $("session-entries").replaceChildren(...detail.entries.map((e) => entryNode(e, names)));
  }

  /** One stored entry, as `tackle sessions show` prints it. */
  function entryNode(entry, names) {
    const c = entry.content;
    const message = c && typeof c === "object" && !Array.isArray(c) ? c : null;
    let text = typeof c === "string" ? c : message && typeof message.content === "string" ? message.content
      : message && typeof message.text === "string" ? message.text : JSON.stringify(c, null, 2);
    let head = entry.kind.replace(/_/g, " ");
    const extra = [];
    if (entry.kind === "assistant" && message && Array.isArray(message.tool_calls)) {
      for (const call of message.tool_calls) {
        names.set(call.id, call.name);
        extra.push(el("div", "call", "→ " + call.name + " " + JSON.stringify(call.arguments)));
      }
    }
    if (entry.kind === "tool_result" && message) {
      const name = names.get(message.tool_call_id);
      if (name) head += " (" + name + ")";
      if (message.is_error) head = "✗ " + head;
    }
    if (entry.kind === "tool_call") text = JSON.stringify(c, null, 2);
    return el(
      "article",
      "entry " + entry.kind,
      el("header", null, head + " · " + time(entry.created_at)),
      text ? el("pre", null, text) : null,
      ...extra,
    );
  }

  /**
   * Reads an SSE stream with fetch (EventSource cannot send the Authorization header) and
   * renders its events into `root`; reconnects after a pause until stopped.
   */
  function streamEvents(path, root) {
    const abort = new AbortController();
    const blocks = new Map();
    let stopped = false;

    // One block per session, one part per turn: the task, the streaming text, a line per call.
    const block = (data) => {
      const key = String(data.session || "?");
      let b = blocks.get(key);
      if (!b) {
        const node = el("article", "live-session", el("header", "mono", "session " + key + " · " + (data.agent || "")));
        b = { node, turn: null, calls: new Map() };
        blocks.set(key, b);
        root.prepend(node);
      }
      return b;
    };
    const newTurn = (b, task) => {
      const text = el("pre", "stream");
      const tools = el("ul", "tools");
      b.node.append(el("div", "turn", task ? el("div", "task", "› " + task) : null, tools, text));
      b.turn = { text, tools };
      return b.turn;
    };

    const handle = (kind, data) => {
      if (kind === "lagged") {
        root.prepend(el("p", "error", data.missed + " events were missed: the view fell behind"));
        return;
      }
      const b = block(data);
      const turn = kind === "turn_started" ? newTurn(b, String(data.content || "")) : b.turn || newTurn(b, "");
      const line = (cls, text) => {
        const li = el("li", cls, text);
        turn.tools.append(li);
        return li;
      };
      const finished = (li, call, prefix) => {
        const took = call.duration_ms === null || call.duration_ms === undefined ? "" : " (" + call.duration_ms + " ms)";
        li.className = "call " + (call.ok ? "ok" : "failed");
        li.textContent = prefix + (call.ok ? "✓ " : "✗ ") + call.name + took + (call.ok ? "" : " " + (call.error_kind || "failed"))
          + (call.preview ? ": " + call.preview : "");
      };
      switch (kind) {
        case "text_delta":
          turn.text.append(String(data.text || ""));
          break;
        case "tool_call_started":
          b.calls.set(data.id, line("call running", "… " + data.name + " " + JSON.stringify(data.arguments ?? {})));
          break;
        case "tool_call_finished":
          finished(b.calls.get(data.id) || line("call", ""), data, "");
          break;
        case "child": {
          const call = data.call || {};
          const prefix = "↳ " + data.child + ": ";
          if (call.event === "tool_call_started") b.calls.set(call.id, line("call running", prefix + "… " + call.name));
          else if (call.event === "tool_call_finished") finished(b.calls.get(call.id) || line("call", ""), call, prefix);
          break;
        }
        case "approval_queued":
          line("approval", "‖ " + data.tool + " waits for approval " + data.id + " (up to " + data.deadline_secs + " s)");
          break;
        case "approval_settled":
        case "approval_answered": {
          const how = String(data.status || data.answer || "").replace(/_/g, " ");
          const who = data.answered_by || data.by;
          line("approval", "▶ approval " + data.id + " " + how + (who ? " by " + who : ""));
          break;
        }
        case "model_retrying":
          line("muted", "model try " + data.attempt + "/" + data.max_attempts + " failed (" + data.reason + "); retrying");
          break;
        case "message":
          line("muted", "message from " + data.from + ": " + data.content);
          break;
        case "background_task":
          line(data.ok ? "call ok" : "call failed", "background task " + data.label + (data.ok ? " finished" : " failed"));
          break;
        case "done":
          if (!turn.text.textContent && data.text) turn.text.textContent = String(data.text);
          line("done", "■ done (" + String(data.reason || "").replace(/_/g, " ") + ")" + (data.error ? ": " + data.error : ""));
          break;
        default:
          break;
      }
    };

    const run = async () => {
      while (!stopped) {
        try {
          const res = await fetch(path, {
            headers: { Authorization: "Bearer " + token(), Accept: "text/event-stream" },
            cache: "no-store",
            credentials: "omit",
            signal: abort.signal,
          });
          if (!res.ok) {
            const data = await res.json().catch(() => null);
            const message = (data && data.error && data.error.message) || "HTTP " + res.status;
            if (res.status === 401) {
              logout(message);
              return;
            }
            show($("live-note"), "The live stream was refused: " + message);
            if (res.status === 403 || res.status === 404) return;
          } else {
            // Said on the element so a watcher (and the browser test) knows events now arrive.
            root.dataset.state = "connected";
            await readSse(res.body, handle);
            root.dataset.state = "reconnecting";
          }
        } catch (e) {
          if (stopped) return;
        }
        await new Promise((r) => setTimeout(r, 2000));
      }
    };
    run();
    return {
      stop() {
        stopped = true;
        abort.abort();
      },
    };
  }

  /** Parses `text/event-stream` (the WHATWG format) from a byte stream, calling on(kind, data). */
  async function readSse(body, on) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let kind = "";
    let data = [];
    const dispatch = () => {
      if (data.length) {
        try {
          on(kind || "message", JSON.parse(data.join("\n")));
        } catch {
          // Not JSON: not one of the agent events this view shows.
        }
      }
      kind = "";
      data = [];
    };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      const lines = buffer.split(/\r\n|\r|\n/);
      buffer = lines.pop();
      for (const raw of lines) {
        if (raw === "") {
          dispatch();
          continue;
        }
        if (raw.startsWith(":")) continue;
        const colon = raw.indexOf(":");
        const field = colon < 0 ? raw : raw.slice(0, colon);
        let value = colon < 0 ? "" : raw.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "event") kind = value;
        else if (field === "data") data.push(value);
      }
    }
  }

  // ---- audit -----------------------------------------------------------------------------

  async function refreshAudit() {
    const form = $("audit-form");
    const params = new URLSearchParams();
    for (const name of ["session", "tool", "since", "limit"]) {
      const v = form.elements[name].value.trim();
      if (v) params.set(name, v);
    }
    const decision = form.elements.decision.value;
    const hideApi = form.elements.hide_api.checked && form.elements.tool.value.trim() !== "api";
    let list;
    try {
      list = await api("GET", "/v1/audit" + (params.toString() ? "?" + params : ""));
    } catch (e) {
      report($("audit-error"), e);
      return;
    }
    show($("audit-error"), "");
    const rows = list.records
      .filter((r) => (!decision || r.decision === decision) && !(hideApi && r.tool === "api"))
      .reverse()
      .map((r) =>
        el(
          "tr",
          "decision-" + r.decision,
          el("td", null, time(r.ts)),
          el("td", "mono", r.session || ""),
          el("td", null, r.agent),
          el("td", null, r.caller),
          el("td", null, r.tool),
          el("td", "args", r.args_summary),
          el("td", "decision", r.decision),
          el("td", null, r.approver || ""),
          el("td", null, r.outcome),
          el("td", "num", r.duration_ms === undefined ? "" : String(r.duration_ms)),
        ),
      );
    $("audit-rows").replaceChildren(...rows);
    if (!rows.length) $("audit-rows").append(el("tr", null, el("td", "muted", "No records match.")));
  }

  // ---- schedules -------------------------------------------------------------------------

  // Switching a schedule needs the `admin` scope; once refused, the buttons are not offered.
  let adminRefused = false;

  async function refreshSchedules() {
    let list;
    try {
      list = await api("GET", "/v1/schedules");
    } catch (e) {
      report($("schedules-error"), e);
      return;
    }
    show($("schedules-error"), "");
    const rows = list.schedules.map((s) => {
      let toggle = null;
      if (!adminRefused) {
        toggle = el("button", "small", s.enabled ? "Disable" : "Enable");
        toggle.type = "button";
        toggle.addEventListener("click", () => switchSchedule(s, !s.enabled));
      }
      return el(
        "tr",
        s.enabled ? null : "disabled",
        el("td", "mono", s.id),
        el("td", null, s.agent),
        el("td", null, s.kind + " " + s.spec),
        el("td", null, s.task),
        el("td", null, time(s.next_fire)),
        el("td", null, time(s.last_fired)),
        el("td", "num", s.fire_count + (s.max_fires ? " / " + s.max_fires : "")),
        el("td", null, s.target),
        el("td", null, (s.enabled ? "yes " : "no "), toggle),
      );
    });
    $("schedule-rows").replaceChildren(...rows);
    if (!rows.length) $("schedule-rows").append(el("tr", null, el("td", "muted", "No schedules.")));
  }

  async function switchSchedule(s, enable) {
    const path = "/v1/schedules/" + encodeURIComponent(s.id) + "/" + (enable ? "enable" : "disable")
      + "?agent=" + encodeURIComponent(s.agent);
    try {
      await api("POST", path);
    } catch (e) {
      if (e.status === 403) adminRefused = true;
      await refreshSchedules();
      report($("schedules-error"), e);
      return;
    }
    refreshSchedules();
  }

  // ---- channels --------------------------------------------------------------------------

  async function refreshChannels() {
    let list;
    try {
      list = await api("GET", "/v1/channels");
    } catch (e) {
      report($("channels-error"), e);
      return;
    }
    show($("channels-error"), "");
    const failing = list.channels.filter((c) => c.failing).length;
    $("channels-failing").textContent = failing ? String(failing) : "";
    const rows = list.channels.map((c) => el(
      "tr",
      c.failing ? "failing" : null,
      el("td", "mono", c.name),
      el("td", null, c.kind),
      el("td", null, c.last_read ? time(c.last_read) : "not read yet"),
      el("td", c.failing ? "error" : "muted",
        c.last_error ? time(c.last_error_at) + ": " + c.last_error : "none"),
      el("td", "num", String(c.unanswered)),
    ));
    $("channel-rows").replaceChildren(...rows);
    if (!rows.length) {
      $("channel-rows").append(el("tr", null, el("td", "muted", "No channel is read (channels.NAME.inbound).")));
    }
  }

  // ---- security --------------------------------------------------------------------------

  async function refreshSecurity() {
    let s;
    try {
      s = await api("GET", "/v1/security");
    } catch (e) {
      report($("security-error"), e);
      return;
    }
    show($("security-error"), "");
    $("security-count").textContent = s.tripped ? String(s.tripped) : "";
    $("security-honeytokens").textContent = s.honeytokens
      ? "Decoy credentials are planted (security.honeytokens); " +
        (s.tripped ? s.tripped + (s.tripped === 1 ? " call has" : " calls have") + " tried to send one out." : "none has been sent out.")
      : "Decoy credentials are off (security.honeytokens: true plants them)." +
        (s.tripped ? " Earlier, " + s.tripped + (s.tripped === 1 ? " call" : " calls") + " tried to send one out." : "");
    const t = s.last_trip;
    $("security-trip").hidden = !t;
    if (t) {
      $("security-facts").replaceChildren(
        el("dt", null, "When"), el("dd", null, time(t.at)),
        el("dt", null, "Tool"), el("dd", "mono", t.tool),
        el("dt", null, "Decoy"), el("dd", "mono", t.token + (t.form ? " (" + t.form + ")" : "")),
        el("dt", null, "Session"), el("dd", "mono", t.session || "none (tackle tools call)"),
      );
    }
    $("security-frozen").replaceChildren(...s.frozen_sessions.map((id) => el("li", "mono", id)));
    if (!s.frozen_sessions.length) $("security-frozen").append(el("li", "muted", "No session is frozen."));
  }

  // ---- MCP tools -------------------------------------------------------------------------

  /** `sha256:` and the first 12 hex digits, as `tackle mcp pins` shows a digest. */
  const shortDigest = (d) => (d ? d.slice(0, 19) : "—");

  /** The diff as lines, each marked as removed (`-`), added (`+`) or kept. */
  function diffView(text) {
    const lines = String(text || "").split("\n");
    if (lines.length && lines[lines.length - 1] === "") lines.pop();
    const kind = (line) => (line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : null);
    return el("pre", "preview diff", ...lines.map((line) => el("span", kind(line), line + "\n")));
  }

  let mcpBusy = false;

  async function refreshMcp() {
    if (mcpBusy) return;
    mcpBusy = true;
    $("mcp-refresh").disabled = true;
    show($("mcp-status"), "Asking the MCP servers…");
    let list;
    try {
      list = await api("GET", "/v1/mcp/tools");
    } catch (e) {
      report($("mcp-error"), e);
      return;
    } finally {
      mcpBusy = false;
      $("mcp-refresh").disabled = false;
      show($("mcp-status"), "");
    }
    show($("mcp-error"), "");
    $("mcp-count").textContent = list.quarantined.length ? String(list.quarantined.length) : "";
    $("mcp-servers").replaceChildren(...list.servers.map((s) => el(
      "li",
      s.state === "ready" ? null : "error",
      el("span", "mono", s.name), " ",
      s.state === "ready" ? "listed its tools" : s.state === "starting" ? "did not list its tools in time" : "failed: " + (s.error || ""),
    )));
    if (!list.servers.length) $("mcp-servers").append(el("li", "muted", "No MCP server is configured (mcp_servers)."));
    $("mcp-none").hidden = list.quarantined.length > 0;
    $("mcp-quarantined").replaceChildren(...list.quarantined.map(quarantinedCard));
    const rows = list.tools.map((t) => el(
      "tr",
      null,
      el("td", "mono", t.server),
      el("td", "mono", t.tool),
      el("td", null, t.state.replace("_", " ")),
      el("td", "mono", shortDigest(t.digest || t.pinned_digest)),
      el("td", null, t.pinned_by || "—"),
      el("td", null, time(t.pinned_at)),
    ));
    $("mcp-rows").replaceChildren(...rows);
    if (!rows.length) $("mcp-rows").append(el("tr", null, el("td", "muted", "No MCP tools listed or pinned.")));
  }

  function quarantinedCard(q) {
    const facts = el(
      "dl", "facts",
      el("dt", null, "Server"), el("dd", "mono", q.server),
      el("dt", null, "Why"), el("dd", null, q.why),
      el("dt", null, "Pinned"), el("dd", "mono", shortDigest(q.pinned_digest) + (q.pinned_by ? " by " + q.pinned_by : "")),
      el("dt", null, "Offered"), el("dd", "mono", q.digest || "—"),
    );
    if (q.removed) facts.append(el("dt", null, "Hidden text"), el("dd", null, "removed before the model sees it: " + q.removed));
    const card = el(
      "li", "card quarantined",
      el("div", null, el("span", "tool", q.registry_name)),
      facts,
      el("div", "muted", "--- pinned  +++ offered"),
      diffView(q.diff),
    );
    if (!adminRefused) {
      const accept = el("button", "allow", "Accept this definition");
      accept.type = "button";
      accept.addEventListener("click", () => acceptTool(q, accept));
      card.append(el("div", "buttons", accept));
    }
    return card;
  }

  async function acceptTool(q, button) {
    button.disabled = true;
    const path = "/v1/mcp/tools/" + encodeURIComponent(q.server) + "/" + encodeURIComponent(q.tool) + "/accept";
    try {
      await api("POST", path, { digest: q.digest });
    } catch (e) {
      if (e.status === 403) adminRefused = true;
      await refreshMcp();
      report($("mcp-error"), e);
      return;
    }
    refreshMcp();
  }

  // ---- wiring ----------------------------------------------------------------------------

  function start() {
    $("login-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const value = $("token").value.trim();
      $("token").value = "";
      if (!value) return;
      sessionStorage.setItem(TOKEN_KEY, value);
      login();
    });
    $("logout").addEventListener("click", () => logout(""));
    for (const tab of document.querySelectorAll("[data-tab]")) {
      tab.addEventListener("click", () => select(tab.dataset.tab));
    }
    $("sessions-refresh").addEventListener("click", refreshSessions);
    $("schedules-refresh").addEventListener("click", refreshSchedules);
    $("channels-refresh").addEventListener("click", refreshChannels);
    $("mcp-refresh").addEventListener("click", refreshMcp);
    $("security-refresh").addEventListener("click", refreshSecurity);
    $("audit-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      refreshAudit();
    });
    if (token()) login();
    else logout("");
  }

  start();
})();
