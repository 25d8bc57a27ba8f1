// dify-mock console: plain JavaScript, no dependencies, no network access
// besides this server's control API (/__mock/api). Every piece of request
// data is put into the page with textContent, never parsed as HTML; answers
// are rendered as Markdown by building elements (markdown below), so HTML in
// an answer stays text.
"use strict";

const API = "/__mock/api";
const state = { entries: new Map(), order: [], selected: 0, active: 0, cassettes: [], filter: "", hidePreflight: true,
  refetch: null, player: null, shownUser: null, apps: [], app: "" };

// ---------- helpers

function el(tag, attrs, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") n.className = v;
    else if (k === "text") n.textContent = v;
    else if (k.startsWith("on")) n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return n;
}
const $ = (id) => document.getElementById(id);

async function api(method, path, body) {
  const opt = { method, headers: {} };
  if (body !== undefined) { opt.headers["Content-Type"] = "application/json"; opt.body = typeof body === "string" ? body : JSON.stringify(body); }
  const r = await fetch(API + path, opt);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = { message: text }; }
  // Errors carry a message; a failed cassette reload, its error.
  if (!r.ok) throw new Error((data && (data.message || data.error)) || r.status + " " + r.statusText);
  return data;
}
function say(id, text, ok) { const p = $(id); p.textContent = text; p.className = "notice " + (ok ? "msg-ok" : "msg-bad"); }
// A notice answers the action that made it; the next action in the same
// panel clears it (capture phase: before that action's own handler runs).
function setupNotices() {
  for (const type of ["click", "change", "submit"]) {
    document.addEventListener(type, (ev) => {
      const panel = ev.target.closest && ev.target.closest("[role=tabpanel]");
      if (!panel || !ev.target.closest("button, input, select, form, summary")) return;
      for (const n of panel.querySelectorAll(".notice")) if (!n.contains(ev.target)) { n.textContent = ""; n.className = ""; }
    }, true);
  }
}
// ---------- apps (docs/mock/apps.md): with several, a switcher in the header
// picks one ("" = all apps for the journal); with one the console shows no
// app anywhere, as before apps existed.

function multi() { return state.apps.length > 1; }
// viewApp is the app the per-app panels (state, cassettes) show: the one
// picked, or the default app under "All apps".
function viewApp() { return state.app || (state.apps.find((a) => a.default) || state.apps[0] || {}).name || ""; }
// appPath addresses a per-app control route to viewApp (?app=NAME); with one
// app it stays as it was.
function appPath(path) { return multi() ? path + (path.includes("?") ? "&" : "?") + "app=" + encodeURIComponent(viewApp()) : path; }
// appLabel names an app in the page: its name and, when it has one, /info's name.
function appLabel(a) { return a.name + (a.app_name ? " — " + a.app_name : "") + (a.default ? " (default)" : ""); }

function setupApps(apps) {
  state.apps = apps || [];
  if (!multi()) return;
  $("app-select").replaceChildren(el("option", { value: "", text: "All apps" }), ...state.apps.map((a) => el("option", { value: a.name, text: appLabel(a) })));
  $("rule-app").replaceChildren(el("option", { value: "", text: "every app" }), ...state.apps.map((a) => el("option", { value: a.name, text: a.name })));
  $("app-pick").hidden = false;
  $("rule-app-wrap").hidden = false;
  const start = new URLSearchParams(location.search).get("app");
  if (start && state.apps.some((a) => a.name === start)) $("app-select").value = start;
  $("app-select").addEventListener("change", () => switchApp($("app-select").value));
  switchApp($("app-select").value);
}

// switchApp shows one app (or all): the journal is filtered in the page,
// the per-app panels load that app's state and cassettes.
function switchApp(name) {
  state.app = name;
  state.shownUser = null;
  $("user-detail").replaceChildren();
  $("rule-app").value = name;
  const url = new URL(location.href);
  if (name) url.searchParams.set("app", name); else url.searchParams.delete("app");
  history.replaceState(null, "", url);
  const shown = viewApp() + (state.app ? "" : " (the default app; pick one above)");
  $("state-title").textContent = "State of app " + shown;
  $("cassettes-title").textContent = "Cassettes of app " + shown;
  $("cassettes-title").hidden = false;
  $("state-export").href = API + appPath("/state/export?download=1");
  $("state-export").setAttribute("download", "dify-mock-state-" + viewApp() + ".json");
  renderList();
  if (!$("panel-state").hidden) loadState();
  loadCassettes().catch(() => {});
}

// plural: "1 message", "2 messages".
function plural(n, one, many) { return n + " " + (n === 1 ? one : (many || one + "s")); }
function fmtMs(ms) { return ms >= 1000 ? (ms / 1000).toFixed(2) + " s" : Math.round(ms) + " ms"; }
function fmtTime(t) { const d = new Date(t); return d.toLocaleTimeString([], { hour12: false }); }
function statusClass(e) { return e.done ? "status s" + Math.floor((e.status || 0) / 100) : "status pending"; }
// An entry in flight shows its status once the headers went out.
function statusText(e) { return e.done ? (e.status || "—") : (e.status ? e.status + "…" : "…"); }

// ---------- tabs (WAI-ARIA tabs pattern: arrows move, Enter/Space/click select)

function setupTabs() {
  const tabs = [...document.querySelectorAll("[role=tab]")];
  const select = (t) => {
    for (const o of tabs) {
      const on = o === t;
      o.setAttribute("aria-selected", on);
      o.tabIndex = on ? 0 : -1;
      $(o.getAttribute("aria-controls")).hidden = !on;
    }
    const name = t.id.slice(4);
    if (name === "state") loadState();
    if (name === "rules") loadRules();
    if (name === "cassettes") loadCassettes();
    history.replaceState(null, "", "#" + name);
  };
  tabs.forEach((t, i) => {
    t.addEventListener("click", () => select(t));
    t.addEventListener("keydown", (ev) => {
      let j = null;
      if (ev.key === "ArrowRight") j = (i + 1) % tabs.length;
      if (ev.key === "ArrowLeft") j = (i - 1 + tabs.length) % tabs.length;
      if (ev.key === "Home") j = 0;
      if (ev.key === "End") j = tabs.length - 1;
      if (j !== null) { ev.preventDefault(); tabs[j].focus(); select(tabs[j]); }
    });
  });
  const start = tabs.find((t) => "#" + t.id.slice(4) === location.hash);
  if (start) select(start);
}

// ---------- requests

function upsert(e) {
  const old = state.entries.get(e.id);
  if (old && old.frames && !e.frames) e.frames = old.frames;
  state.entries.set(e.id, Object.assign(old || {}, e));
  if (!old) state.order.unshift(e.id);
  while (state.order.length > 2000) state.entries.delete(state.order.pop());
}

function isPreflight(e) { return e.method === "OPTIONS"; }

function matches(e) {
  if (state.hidePreflight && isPreflight(e)) return false;
  if (state.app && e.app !== state.app) return false;
  const f = state.filter.toLowerCase();
  if (!f) return true;
  return [e.method + " " + e.path, e.user, String(e.status), e.cassette, e.fault, e.rule, multi() && e.app].some((v) => v && String(v).toLowerCase().includes(f));
}

// matchText says how a chat turn was chosen (docs/mock/hybrid.md): the
// match, the similarity score of a nearest turn, a live upstream answer.
function matchText(e) {
  if (!e.match) return "";
  if (e.match === "similar" && e.score != null) return "similar " + e.score.toFixed(3);
  if (e.match === "upstream") return "live from the upstream" + (e.saved ? ", saved" : "");
  return e.match;
}

// The list is one Tab stop (roving tabindex): the active row has tabindex 0,
// the others -1; arrows, Home and End move between rows, Enter or a click
// opens one. Re-rendering keeps focus on the active row.
function renderList() {
  const list = $("req-list");
  const hadFocus = list.contains(document.activeElement);
  const all = state.order.map((id) => state.entries.get(id));
  const rows = all.filter(matches);
  const hidden = state.hidePreflight ? all.filter(isPreflight).length : 0;
  $("req-hidden").textContent = hidden ? plural(hidden, "CORS preflight") + " hidden" : "";
  $("req-empty").hidden = state.order.length > 0;
  if (!rows.some((e) => e.id === state.active)) state.active = rows.some((e) => e.id === state.selected) ? state.selected : (rows[0] ? rows[0].id : 0);
  list.replaceChildren(...rows.map((e) => {
    const frames = e.frame_count ? plural(e.frame_count, "frame") : "";
    const sub = [e.user && "user " + e.user, e.cassette && "cassette " + e.cassette + (e.turn != null ? " #" + e.turn : ""),
      matchText(e), e.fault && e.fault !== "none" && "fault " + e.fault, e.rule && e.rule, frames].filter(Boolean).join(" · ");
    const b = el("button", { type: "button", "data-id": e.id, "aria-current": e.id === state.selected ? "true" : "false",
      tabindex: e.id === state.active ? "0" : "-1", onclick: () => select(e.id) },
      el("span", { class: "muted", text: fmtTime(e.time) }),
      el("span", { class: statusClass(e), text: statusText(e) }),
      el("span", {}, multi() ? [el("span", { class: "app-tag", text: e.app || "no app" }), " "] : null, e.method + " " + e.path),
      el("span", { class: "muted", text: e.done ? fmtMs(e.duration_ms) : "in flight" }),
      el("span", { class: "sub", text: sub }));
    return el("li", { class: "req", "data-id": e.id }, b);
  }));
  if (hadFocus) {
    const b = list.querySelector('button[tabindex="0"]');
    if (b) b.focus();
  }
}

function setupList() {
  $("req-list").addEventListener("keydown", (ev) => {
    const btns = [...$("req-list").querySelectorAll("button")];
    const i = btns.indexOf(document.activeElement);
    let j = null;
    if (ev.key === "ArrowDown") j = Math.min(i + 1, btns.length - 1);
    if (ev.key === "ArrowUp") j = Math.max(i - 1, 0);
    if (ev.key === "Home") j = 0;
    if (ev.key === "End") j = btns.length - 1;
    if (j === null || !btns[j]) return;
    ev.preventDefault();
    btns[i] && (btns[i].tabIndex = -1);
    btns[j].tabIndex = 0;
    state.active = Number(btns[j].dataset.id);
    btns[j].focus();
  });
  $("req-filter").addEventListener("input", (ev) => { state.filter = ev.target.value; renderList(); });
  $("req-preflight").addEventListener("change", (ev) => { state.hidePreflight = ev.target.checked; renderList(); });
  // Clearing cannot be undone: the button asks first, with the focus on
  // Cancel, so an Enter meant for something else clears nothing.
  const ask = $("req-clear-confirm");
  $("req-clear").addEventListener("click", () => {
    $("req-clear-what").textContent = "Clear " + plural(state.order.length, "request") + " from the journal?";
    ask.hidden = false;
    $("req-clear-no").focus();
  });
  $("req-clear-no").addEventListener("click", () => { ask.hidden = true; $("req-clear").focus(); });
  $("req-clear-yes").addEventListener("click", async () => { ask.hidden = true; $("req-clear").focus(); await api("DELETE", "/journal"); });
}

async function select(id) {
  state.selected = id;
  state.active = id;
  renderList();
  await fetchEntry(id);
}

async function fetchEntry(id) {
  try {
    const e = await api("GET", "/journal/" + id);
    upsert(e);
    if (state.selected === id) renderDetail(e);
  } catch (err) {
    if (state.selected === id) $("req-detail").replaceChildren(el("p", { class: "msg-bad", text: err.message }));
  }
}

// refetchSoon reloads the selected entry while it streams, at most every
// 250 ms, so the chat view grows with the stream.
function refetchSoon(id) {
  if (id !== state.selected || state.refetch) return;
  state.refetch = setTimeout(() => { state.refetch = null; fetchEntry(id); }, 250);
}

function renderDetail(e) {
  const d = $("req-detail");
  const facts = el("dl", { class: "facts" });
  const add = (k, v) => { if (v !== undefined && v !== null && v !== "") facts.append(el("dt", { text: k }), el("dd", { text: String(v) })); };
  add("Request", e.method + " " + e.path + (e.query ? "?" + e.query : ""));
  if (multi()) add("App", e.app || "none (its key belongs to no app)");
  add("Status", e.done ? e.status : (e.status ? e.status + ", still streaming…" : "waiting for the headers…"));
  add("Time", new Date(e.time).toISOString());
  add("Duration", fmtMs(e.duration_ms));
  add("Origin", e.origin);
  add("End user", e.user);
  add("Conversation", e.conversation_id);
  add("Cassette", e.cassette && e.cassette + (e.turn != null ? ", turn " + e.turn : ""));
  add("Match", matchText(e));
  add("Upstream", e.upstream && e.upstream + (e.upstream === "live" ? (e.saved ? ", saved" : e.not_saved ? ", not saved: " + e.not_saved : "") : ""));
  add("Normalised", e.normalised);
  add("Speed", e.speed);
  add("Rule", e.rule);
  add("Fault", e.fault && e.fault !== "none" ? e.fault : "");
  add("Outcome", e.outcome);
  add("Frames", e.frame_count ? plural(e.frame_count, "frame") + (e.frames_dropped ? " (" + e.frames_dropped + " not kept)" : "") : "");
  add("Cut by the journal", (e.truncated || []).join(", ") + (e.stream_data_dropped ? (e.truncated && e.truncated.length ? ", " : "") + "frame bytes" : ""));
  const parts = [el("h2", { text: "Request " + e.id }), facts];
  if (e.uploads && e.uploads.length) {
    parts.push(el("h2", { text: "Uploads" }), el("ul", {}, e.uploads.map((u) => el("li", { text: `${u.filename} (${u.size} bytes, sha256 ${u.sha256.slice(0, 16)}…)` }))));
  }
  if (e.frames && e.frames.length) {
    parts.push(el("h2", { text: "Timeline" }), timeline(e.frames), frameTable(e.frames));
    parts.push(el("h2", { text: "As a chat UI shows it" }), chatView(e.body && e.body.query, e.frames.map((f) => f.data || "")));
    if (e.done && e.method === "POST" && e.status === 200) parts.push(saveForm(e));
  }
  const bodyTitle = e.body_truncated ? `Request body (first 64 KiB of ${e.body_size} bytes: the journal keeps no more)` : "Request body";
  if (e.body) parts.push(el("h2", { text: bodyTitle }), el("pre", { text: JSON.stringify(e.body, null, 2) }));
  else if (e.body_text) parts.push(el("h2", { text: bodyTitle }), el("pre", { text: e.body_text }));
  d.replaceChildren(...parts);
}

// ---------- timeline: each frame drawn at its planned and its actual time

const EVENT_COLORS = { agent_thought: "#7c4dff", agent_message: "#0b7a3b", message: "#1a56db", message_end: "#00838f",
  message_file: "#c2185b", error: "#b3261e", ping: "#9e9e9e", tts_message: "#795548", tts_message_end: "#795548" };
const color = (ev) => EVENT_COLORS[ev] || "#607d8b";

function timeline(frames) {
  const NS = "http://www.w3.org/2000/svg";
  const W = 900, H = 92, L = 58, R = 12;
  const max = Math.max(1, ...frames.map((f) => Math.max(f.planned_ms, f.actual_ms)));
  const x = (ms) => L + (ms / max) * (W - L - R);
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("class", "timeline");
  svg.setAttribute("role", "img");
  const late = frames.map((f) => f.actual_ms - f.planned_ms);
  const worst = Math.max(0, ...late);
  svg.setAttribute("aria-label", `${frames.length} frames over ${fmtMs(max)}; latest frame ${fmtMs(worst)} after its planned time`);
  const add = (name, attrs, text) => {
    const n = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    if (text) n.textContent = text;
    svg.append(n);
    return n;
  };
  add("text", { x: 4, y: 28 }, "planned");
  add("text", { x: 4, y: 68 }, "actual");
  add("line", { x1: L, x2: W - R, y1: 25, y2: 25, class: "axis" });
  add("line", { x1: L, x2: W - R, y1: 65, y2: 65, class: "axis" });
  add("text", { x: L, y: 88 }, "0");
  add("text", { x: W - R - 40, y: 88 }, fmtMs(max));
  frames.forEach((f, i) => {
    add("line", { x1: x(f.planned_ms), y1: 29, x2: x(f.actual_ms), y2: 61, class: "link" });
    const p = add("circle", { cx: x(f.planned_ms), cy: 25, r: 4, class: "planned", stroke: color(f.event) });
    const a = add("circle", { cx: x(f.actual_ms), cy: 65, r: 4, class: "actual", fill: color(f.event), "data-frame": i });
    const title = `#${i} ${f.event || "?"}: planned ${fmtMs(f.planned_ms)}, sent ${fmtMs(f.actual_ms)}`;
    for (const c of [p, a]) { const t = document.createElementNS(NS, "title"); t.textContent = title; c.append(t); }
  });
  const seen = [...new Set(frames.map((f) => f.event || "?"))];
  const legend = el("div", { class: "legend", "aria-hidden": "true" }, seen.map((ev) => { const s = el("span", { text: ev }); s.style.setProperty("--c", color(ev)); return s; }));
  return el("figure", { class: "tl" }, svg, legend,
    el("figcaption", { class: "muted", text: `Hollow: when each frame was due (recorded offset ÷ speed). Filled: when it was sent. Worst lateness ${fmtMs(worst)}.` }));
}

function frameTable(frames) {
  const rows = frames.map((f, i) => el("tr", {},
    el("td", { text: f.index < 0 ? i + " (made up)" : i }), el("td", { text: f.event }),
    el("td", { text: f.planned_ms.toFixed(1) }), el("td", { text: f.actual_ms.toFixed(1) }),
    el("td", { text: (f.actual_ms - f.planned_ms).toFixed(1) })));
  return el("details", {}, el("summary", { text: "Frames as a table" }),
    el("table", { class: "grid frames" },
      el("thead", {}, el("tr", {}, ["#", "Event", "Planned (ms)", "Sent (ms)", "Late (ms)"].map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, rows)));
}

// ---------- Markdown, as chat UIs render answers, built from elements only
// (never innerHTML): headings, paragraphs, lists, quotes, fenced code,
// inline code, bold, italic and http(s) links. Anything else, HTML
// included, is shown as the text it is.

function markdown(src) {
  const out = document.createDocumentFragment();
  const lines = String(src).replace(/\r\n?/g, "\n").split("\n");
  let para = [];
  let list = null;
  const flush = () => {
    if (para.length) {
      const p = el("p");
      para.forEach((l, i) => { if (i) p.append(el("br")); p.append(inline(l)); });
      out.append(p);
      para = [];
    }
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    let m;
    if ((m = line.match(/^\s*(```|~~~)\s*([\w+-]*)\s*$/))) {
      flush();
      const fence = m[1], code = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence); i++) code.push(lines[i]);
      out.append(el("pre", { class: "md-code" }, el("code", { text: code.join("\n") })));
      continue;
    }
    if (!line.trim()) { flush(); continue; }
    if ((m = line.match(/^(#{1,6})\s+(.*)$/))) { flush(); out.append(el("h" + Math.min(6, m[1].length + 2), { class: "md-h" }, inline(m[2]))); continue; }
    if ((m = line.match(/^\s*>\s?(.*)$/))) { flush(); out.append(el("blockquote", {}, inline(m[1]))); continue; }
    const ul = line.match(/^\s*[-*+]\s+(.*)$/), ol = line.match(/^\s*\d+[.)]\s+(.*)$/);
    if (ul || ol) {
      if (para.length) flush();
      const tag = ul ? "ul" : "ol";
      if (!list || list.tagName.toLowerCase() !== tag) { list = el(tag); out.append(list); }
      list.append(el("li", {}, inline((ul || ol)[1])));
      continue;
    }
    if (list && /^\s+\S/.test(line)) { list.lastChild.append(" ", inline(line.trim())); continue; }
    list = null;
    para.push(line);
  }
  flush();
  return out;
}

// inline renders `code`, **bold**, *italic*/_italic_ and [text](http…)
// within one line.
function inline(text) {
  const frag = document.createDocumentFragment();
  // Underscores emphasise only at word boundaries (snake_case and
  // window.__x stay as they are), as in CommonMark.
  const re = /(`+)([^`]+?)\1|\*\*([^*]+)\*\*|(?<!\w)__([^_]+)__(?!\w)|\*([^*\s][^*]*)\*|(?<!\w)_([^_\s][^_]*)_(?!\w)|\[([^\]]+)\]\(([^)\s]+)\)/g;
  let last = 0, m;
  while ((m = re.exec(text))) {
    if (m.index > last) frag.append(text.slice(last, m.index));
    if (m[2] !== undefined) frag.append(el("code", { text: m[2] }));
    else if (m[3] !== undefined || m[4] !== undefined) frag.append(el("strong", {}, inline(m[3] !== undefined ? m[3] : m[4])));
    else if (m[5] !== undefined || m[6] !== undefined) frag.append(el("em", {}, inline(m[5] !== undefined ? m[5] : m[6])));
    else if (/^https?:\/\//i.test(m[8])) frag.append(el("a", { href: m[8], target: "_blank", rel: "noopener noreferrer" }, inline(m[7])));
    else frag.append(m[0]); // only http(s) links: javascript: and the like stay text
    last = re.lastIndex;
  }
  if (last < text.length) frag.append(text.slice(last));
  return frag;
}

// ---------- chat rendering: thoughts with tool calls, the growing answer, errors

function parseFrame(raw) {
  for (const line of raw.split("\n")) {
    if (line.startsWith("data:")) {
      try { return JSON.parse(line.slice(5).trim()); } catch (e) { return { event: "malformed", raw: line }; }
    }
    if (line.startsWith("event:")) return { event: line.slice(6).trim() };
  }
  return null;
}

// foldChat turns frames into {thoughts, answer, errors, files, usage}.
function foldChat(frames) {
  const out = { thoughts: [], byId: new Map(), answer: "", errors: [], files: [], usage: null };
  for (const raw of frames) {
    const ev = parseFrame(raw);
    if (!ev) continue;
    switch (ev.event) {
      case "agent_thought": {
        let t = out.byId.get(ev.id);
        if (!t) { t = {}; out.byId.set(ev.id, t); out.thoughts.push(t); }
        Object.assign(t, { thought: ev.thought, tool: ev.tool, input: ev.tool_input, observation: ev.observation, position: ev.position });
        break;
      }
      case "agent_message": out.answer += ev.answer || ""; break;
      case "message":
        if ((ev.answer || "").startsWith(out.answer)) out.answer = ev.answer || "";
        else out.answer += ev.answer || "";
        break;
      case "message_replace": out.answer = ev.answer || ""; break;
      case "message_file": out.files.push(ev.url || ev.id); break;
      case "message_end": out.usage = ev.metadata && ev.metadata.usage; break;
      case "error": out.errors.push(`${ev.code || "error"} (${ev.status || "?"}): ${ev.message || ""}`); break;
      case "malformed": out.errors.push("malformed frame: " + ev.raw.slice(0, 80)); break;
    }
  }
  return out;
}

function chatView(query, frames) {
  const c = foldChat(frames);
  const items = [];
  if (query) items.push(el("div", { class: "bubble user" }, el("span", { class: "label", text: "user" }), query));
  for (const t of c.thoughts) {
    if (!t.thought && !t.tool) continue;
    const b = el("div", { class: "bubble thought" }, el("span", { class: "label", text: "agent thought" }), t.thought || "");
    if (t.tool) {
      b.append(el("div", { class: "tool" }, el("strong", { text: "Tool: " + t.tool }), el("code", { text: t.input || "" }),
        t.observation ? el("div", {}, el("span", { class: "label", text: "observation" }), t.observation) : el("em", { class: "muted", text: "waiting for the tool…" })));
    }
    items.push(b);
  }
  if (c.answer) items.push(el("div", { class: "bubble answer", "data-role": "answer" }, el("span", { class: "label", text: "answer" }), markdown(c.answer)));
  for (const f of c.files) items.push(el("div", { class: "bubble" }, el("span", { class: "label", text: "file" }), f));
  for (const e of c.errors) items.push(el("div", { class: "bubble error", role: "alert" }, el("span", { class: "label", text: "error" }), e));
  if (c.usage) items.push(el("p", { class: "usage", text: `${c.usage.total_tokens} tokens · ${c.usage.total_price} ${c.usage.currency} · latency ${c.usage.latency}s` }));
  if (!frames.some(Boolean)) items.push(el("p", { class: "muted", text: "(frame bytes were not kept for this request)" }));
  return el("div", { class: "chat" }, items);
}

function saveForm(e) {
  const name = el("input", { id: "save-name", required: true, pattern: "[a-z0-9][a-z0-9._-]*", placeholder: "my-broken-answer" });
  const msg = el("p", { id: "save-msg", role: "status" });
  const f = el("form", { class: "inline" }, el("label", {}, "Save this stream as cassette", name), el("button", { type: "submit", text: "Save" }), msg);
  f.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      const r = await api("POST", "/cassettes", { entry_id: e.id, name: name.value });
      msg.textContent = "Saved " + r.path; msg.className = "msg-ok";
    } catch (err) { msg.textContent = err.message; msg.className = "msg-bad"; }
  });
  return f;
}

// ---------- rules

async function loadRules() {
  const r = await api("GET", "/rules");
  const tb = $("rules-table").querySelector("tbody");
  tb.replaceChildren(...r.data.map((x) => el("tr", { "data-rule": x.id },
    el("td", { text: x.id + (x.note ? " — " + x.note : "") }),
    el("td", { text: [x.app && "app " + x.app, x.route || "every route", x.user && "user " + x.user, x.conversation_id && "conversation " + x.conversation_id].filter(Boolean).join(", ") }),
    el("td", { text: [x.cassette && "cassette " + x.cassette, x.speed != null && "speed " + x.speed, x.fault && "fault " + x.fault].filter(Boolean).join(", ") }),
    el("td", { text: x.used }),
    el("td", { text: x.remaining == null ? "until deleted" : x.remaining }),
    el("td", {}, el("button", { type: "button", "aria-label": "Delete " + x.id, text: "Delete", onclick: async () => { await api("DELETE", "/rules/" + x.id); loadRules(); } })))));
  if (!r.data.length) tb.append(el("tr", {}, el("td", { colspan: 6, class: "muted", text: "No rules: every response follows the headers, the cassettes and the server flags." })));
}

function setupRules() {
  $("rule-fault").addEventListener("change", (ev) => { $("rule-custom-wrap").hidden = ev.target.value !== "custom"; });
  $("rule-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    let fault = $("rule-fault").value;
    if (fault === "custom") fault = $("rule-custom").value.trim();
    const body = { route: $("rule-route").value, user: $("rule-user").value.trim(), conversation_id: $("rule-conv").value.trim(),
      cassette: $("rule-cassette").value, fault, times: parseInt($("rule-times").value || "0", 10) };
    if (multi() && $("rule-app").value) body.app = $("rule-app").value;
    if ($("rule-speed").value !== "") body.speed = parseFloat($("rule-speed").value);
    try {
      const r = await api("POST", "/rules", body);
      say("rule-msg", `Added ${r.id}: the next ${r.times || "∞"} matching request(s) get ${[r.cassette, r.speed != null && "speed " + r.speed, r.fault].filter(Boolean).join(", ")}.`, true);
      loadRules();
    } catch (err) { say("rule-msg", err.message, false); }
  });
  $("rules-clear").addEventListener("click", async () => { await api("DELETE", "/rules"); loadRules(); });
}

// ---------- state

async function loadState() {
  const app = viewApp();
  const s = await api("GET", appPath("/state"));
  if (viewApp() !== app) return; // another app was picked meanwhile: its own load shows it
  const t = s.totals;
  $("state-totals").textContent = [plural(t.end_users, "end user"), plural(t.conversations, "conversation"), plural(t.messages, "message"), plural(t.files, "upload")].join(" · ");
  const tb = $("users-table").querySelector("tbody");
  tb.replaceChildren(...s.end_users.map((u) => el("tr", {},
    el("th", { scope: "row" }, el("button", { type: "button", class: "link", text: u.user, onclick: () => showUser(u.user) })),
    el("td", { text: u.conversations }), el("td", { text: u.messages }), el("td", { text: u.files }),
    el("td", {}, el("button", { type: "button", "aria-label": "Reset end user " + u.user, text: "Reset", onclick: async () => {
      try { await api("POST", appPath("/state/reset"), { user: u.user }); say("state-msg", "Reset end user " + u.user + ".", true); }
      catch (err) { say("state-msg", err.message, false); }
      loadState();
    } })))));
  // The open details follow the state: a reset user's deleted data goes,
  // without asking for a user the state no longer has (that would be a 404).
  if (state.shownUser !== null) {
    if (s.end_users.some((u) => u.user === state.shownUser)) showUser(state.shownUser);
    else noUser(state.shownUser);
  }
  if (!s.end_users.length) tb.append(el("tr", {}, el("td", { colspan: 5, class: "muted", text: "No end users yet." })));
}

function noUser(user, why) {
  $("user-detail").replaceChildren(el("h2", { text: "End user " + user }), el("p", { class: "muted", text: "No conversations or uploads" + (why ? " (" + why + ")." : ".") }));
}

async function showUser(user) {
  state.shownUser = user;
  let u;
  try { u = await api("GET", appPath("/state/users/" + encodeURIComponent(user))); }
  catch (err) {
    if (state.shownUser === user) noUser(user, err.message);
    return;
  }
  if (state.shownUser !== user) return;
  const out = [el("h2", { text: "End user " + u.user })];
  for (const [i, c] of u.conversations.entries()) {
    out.push(el("details", { open: i === 0 }, el("summary", { text: `${c.name} — ${plural(c.messages.length, "message")} (${c.id})` }),
      el("div", { class: "chat" }, c.messages.flatMap((m) => [
        el("div", { class: "bubble user" }, m.query),
        m.status === "error" ? el("div", { class: "bubble error" }, m.error || "") : el("div", { class: "bubble answer" }, markdown(m.answer || ""))]))));
  }
  if (!u.conversations.length && !u.files.length) out.push(el("p", { class: "muted", text: "No conversations or uploads." }));
  if (u.files.length) out.push(el("h2", { text: "Uploads" }), el("ul", {}, u.files.map((f) => el("li", { text: `${f.file.name} (${f.file.size} bytes)` }))));
  $("user-detail").replaceChildren(...out);
}

function setupState() {
  $("state-reset").addEventListener("click", async () => {
    try { await api("POST", appPath("/state/reset"), {}); say("state-msg", multi() ? "All state of app " + viewApp() + " was reset." : "All state was reset.", true); state.shownUser = null; $("user-detail").replaceChildren(); loadState(); }
    catch (err) { say("state-msg", err.message, false); }
  });
  $("state-import").addEventListener("change", async (ev) => {
    const f = ev.target.files[0];
    if (!f) return;
    try { await api("POST", appPath("/state/import"), await f.text()); say("state-msg", "Imported " + f.name + (multi() ? " into app " + viewApp() : "") + ".", true); loadState(); }
    catch (err) { say("state-msg", err.message, false); }
    ev.target.value = "";
  });
}

// ---------- cassettes and the player

async function loadCassettes() {
  const app = viewApp();
  const r = await api("GET", appPath("/cassettes"));
  if (viewApp() !== app) return; // another app was picked meanwhile
  state.cassettes = r.data;
  $("cassette-list").replaceChildren(...r.data.map((c) => el("li", {},
    el("strong", { text: c.name }), c.default ? " (default)" : "", " ", el("span", { class: "muted", text: `${c.provenance}, ${c.turns} turn(s)` + (c.fault ? ", fault " + c.fault : "") }),
    c.description ? el("div", { class: "muted", text: c.description }) : null)));
  const keep = (sel, values) => { const v = sel.value; sel.replaceChildren(...values); if (v) sel.value = v; };
  keep($("rule-cassette"), [el("option", { value: "", text: "(normal selection)" }), ...r.data.map((c) => el("option", { value: c.name, text: c.name }))]);
  keep($("player-cassette"), r.data.map((c) => el("option", { value: c.name, text: c.name })));
  playerTurns();
}

function playerTurns() {
  const c = state.cassettes.find((x) => x.name === $("player-cassette").value);
  $("player-turn").replaceChildren(...(c ? c.queries.map((q, i) => el("option", { value: i, text: `#${i} ${q.slice(0, 40)}` })) : []));
}

function stopPlayer() { if (state.player) { state.player.forEach(clearTimeout); state.player = null; } }

function setupPlayer() {
  $("player-cassette").addEventListener("change", playerTurns);
  $("player-stop").addEventListener("click", stopPlayer);
  $("cassettes-reload").addEventListener("click", async () => {
    try {
      const r = await api("POST", appPath("/cassettes/reload"), {});
      say("cassettes-msg", `Reloaded ${r.cassettes.length} cassettes from ${r.source}.`, true);
    } catch (err) { say("cassettes-msg", err.message, false); }
    loadCassettes();
  });
  $("player-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    stopPlayer();
    const d = await api("GET", appPath("/cassettes/" + encodeURIComponent($("player-cassette").value)));
    const turn = d.turn_list[parseInt($("player-turn").value || "0", 10)];
    const speed = parseFloat($("player-speed").value);
    const out = $("player-out");
    const shown = [];
    const start = performance.now();
    const draw = () => {
      const frames = shown.map((f) => ({ event: f.event, planned_ms: f.offset_ms / (speed || 1), actual_ms: f.at, index: 0 }));
      out.replaceChildren(el("p", { class: "muted", text: `${shown.length}/${turn.frames.length} frames` }), timeline(frames), chatView(turn.query, shown.map((f) => f.data)));
    };
    state.player = turn.frames.map((f) => setTimeout(() => { shown.push(Object.assign({ at: performance.now() - start }, f)); draw(); }, speed ? f.offset_ms / speed : 0));
    draw();
  });
}

// ---------- live updates

function connect() {
  const es = new EventSource(API + "/events");
  es.addEventListener("hello", () => { $("live").textContent = "live"; $("live").className = "live on"; loadJournal(); });
  es.onerror = () => { $("live").textContent = "reconnecting…"; $("live").className = "live off"; };
  for (const t of ["request", "update", "done"]) {
    es.addEventListener(t, (m) => {
      const ev = JSON.parse(m.data);
      upsert(ev.data);
      renderList();
      if (ev.id === state.selected) (t === "done" ? fetchEntry(ev.id) : refetchSoon(ev.id));
    });
  }
  es.addEventListener("frame", (m) => {
    const ev = JSON.parse(m.data);
    const e = state.entries.get(ev.id);
    if (e) { e.frame_count = (e.frame_count || 0) + 1; }
    refetchSoon(ev.id);
    scheduleListRender();
  });
  es.addEventListener("cleared", () => { state.entries.clear(); state.order = []; state.selected = 0; renderList(); $("req-detail").replaceChildren(el("p", { class: "muted", text: "Journal cleared." })); });
  es.addEventListener("lagged", () => loadJournal());
  es.addEventListener("rules", () => { if (!$("panel-rules").hidden) loadRules(); });
  // With several apps these events name the app that changed.
  const ours = (m) => { const ev = m.data ? JSON.parse(m.data) : {}; return !multi() || !ev.data || !ev.data.app || ev.data.app === viewApp(); };
  es.addEventListener("state", (m) => { if (!$("panel-state").hidden && ours(m)) loadState(); });
  es.addEventListener("cassettes", (m) => { if (ours(m)) loadCassettes(); });
}

let listTimer = null;
function scheduleListRender() { if (!listTimer) listTimer = setTimeout(() => { listTimer = null; renderList(); }, 200); }

async function loadJournal() {
  let r;
  try { r = await api("GET", "/journal?limit=500"); } catch (e) {
    // serve --journal=false: say so where the requests would be.
    $("req-empty").textContent = e.message; $("req-empty").hidden = false; $("req-clear").disabled = true;
    return;
  }
  state.entries.clear(); state.order = [];
  for (const e of r.data) upsert(e);
  renderList();
}

async function loadInfo() {
  const i = await api("GET", "");
  setupApps(i.apps);
  const journal = i.journal === false ? "journal off" : `journal ${i.journal_size} requests / ${Math.round(i.journal_bytes / 1048576)} MiB, bodies cut at 64 KiB`;
  $("server-info").textContent = multi() ? `${state.apps.length} apps · speed ${i.speed} · ${journal}` + (i.journal_dropped ? ` (${i.journal_dropped} dropped for size)` : "") + (i.fault ? " · --fault " + i.fault : "") : `${i.app} · mode ${i.mode} · speed ${i.speed} · ${journal}` + (i.journal_dropped ? ` (${i.journal_dropped} dropped for size)` : "") + (i.fault ? " · --fault " + i.fault : "");
}

document.addEventListener("DOMContentLoaded", () => {
  setupTabs(); setupNotices(); setupList(); setupRules(); setupState(); setupPlayer();
  // The apps come first: every per-app request names one.
  loadInfo().catch((e) => { $("server-info").textContent = e.message; }).then(() => { if (!multi()) loadCassettes().catch(() => {}); });
  connect();
});
