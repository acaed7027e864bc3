// The harnessx trace viewer. Every value from the API is untrusted: the
// DOM is built with createElement and textContent only, never from markup.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);

  // el creates an element with a class and text, and appends children.
  function el(tag, cls, text, children) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    for (const c of children || []) e.appendChild(c);
    return e;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function fmtInt(n) {
    return Number(n || 0).toLocaleString("en-US");
  }

  function fmtMS(ms) {
    if (ms < 0.1) return Math.round(ms * 1000) + "µs";
    if (ms < 1000) return ms.toFixed(1) + "ms";
    if (ms < 60000) return (ms / 1000).toFixed(2) + "s";
    return Math.floor(ms / 60000) + "m" + String(Math.floor(ms / 1000) % 60).padStart(2, "0") + "s";
  }

  function fmtTime(s) {
    const d = new Date(s);
    return isNaN(d) ? "-" : d.toISOString().replace("T", " ").replace("Z", "");
  }

  function setStatus(text) {
    $("status").textContent = text;
  }

  async function getJSON(url) {
    const res = await fetch(url, { headers: { Accept: "application/json" } });
    if (!res.ok) throw new Error(url + ": " + res.status + " " + (await res.text()));
    return res.json();
  }

  let current = null; // "run:<key>" or "inc:<recording>/<name>"

  async function loadList() {
    let data;
    try {
      data = await getJSON("/api/runs");
    } catch (err) {
      setStatus(String(err));
      return;
    }
    const body = $("runs").tBodies[0];
    clear(body);
    for (const r of data.runs) {
      const tr = el("tr", r.errors > 0 ? "failed" : "", null, [
        el("td", "", fmtTime(r.start)),
        el("td", "", r.agent),
        el("td", "", r.status),
        el("td", "num", fmtMS(r.duration_ms)),
        el("td", "num", r.spans),
        el("td", "num", fmtInt(r.usage.input) + " / " + fmtInt(r.usage.output)),
        el("td", "num", r.errors > 0 ? r.errors + (r.error_type ? " (" + r.error_type + ")" : "") : "0"),
      ]);
      tr.dataset.key = r.key;
      tr.dataset.runId = r.id;
      if (current === "run:" + r.key) tr.classList.add("selected");
      tr.addEventListener("click", () => { location.hash = "run=" + encodeURIComponent(r.key); });
      body.appendChild(tr);
    }
    $("no-runs").hidden = data.runs.length > 0;
    const incs = $("incidents");
    clear(incs);
    for (const inc of data.incidents) {
      const li = el("li", "", inc.recording + " / " + inc.name + " (" + fmtInt(inc.size) + " bytes)");
      li.dataset.recording = inc.recording;
      li.dataset.name = inc.name;
      li.addEventListener("click", () => {
        location.hash = "incident=" + encodeURIComponent(inc.recording) + "/" + encodeURIComponent(inc.name);
      });
      incs.appendChild(li);
    }
    $("no-incidents").hidden = data.incidents.length > 0;
    const probs = $("problems");
    clear(probs);
    for (const p of data.problems) probs.appendChild(el("li", "failed", p));
    $("problems-box").hidden = data.problems.length === 0;
    setStatus(data.runs.length + (data.runs.length === 1 ? " run" : " runs") + ", updated " + new Date().toLocaleTimeString());
  }

  function attr(span, key) {
    for (const a of span.attrs) if (a.key === key) return a;
    return null;
  }

  // valueBlock shows a value as text, pretty-printing complete JSON, and
  // notes a cut value's full size.
  function valueBlock(a) {
    const box = el("div", "value");
    let text = a.value;
    if (!a.truncated && (a.type === "array" || a.type === "map" || /^\s*[\[{]/.test(text))) {
      try { text = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* not JSON: as is */ }
    }
    box.appendChild(el("pre", "", text));
    if (a.truncated) {
      box.appendChild(el("p", "note", "truncated: showing " + fmtInt(a.value.length) + " characters of " + fmtInt(a.size) + " bytes"));
    }
    return box;
  }

  // Media parts are named by reference, "artifact:sha256:<hex>". An
  // allow-listed image shows as a thumbnail: an <img> whose address the
  // viewer builds from the digest alone (the server checks the bytes
  // against it and against the type, and sets the type itself); any other
  // part is a download link. No part data ever becomes markup.
  const PART_REF = /^artifact:sha256:([0-9a-f]{64})$/;
  const PART_REFS = /artifact:sha256:([0-9a-f]{64})(?![0-9a-fA-F])/g;
  const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];

  function partURL(hex, type) {
    return "/parts/sha256-" + hex + (type ? "?type=" + encodeURIComponent(type) : "");
  }

  // partView shows one part {uri, mime_type, type or modality, size}, or
  // returns null when its uri is not a part reference.
  function partView(p) {
    const m = PART_REF.exec(String(p.uri || ""));
    if (!m) return null;
    const hex = m[1];
    const mime = typeof p.mime_type === "string" ? p.mime_type : "";
    const fig = el("figure", "part");
    fig.dataset.ref = "artifact:sha256:" + hex;
    if (IMAGE_TYPES.includes(mime)) {
      const img = document.createElement("img");
      img.className = "thumb";
      img.alt = mime + " sha256:" + hex.slice(0, 12);
      img.src = partURL(hex, mime);
      img.addEventListener("error", () => {
        fig.classList.add("broken");
        fig.appendChild(el("p", "note", "not shown: no intact copy of these bytes, or they are not " + mime));
      });
      const link = el("a", "", null, [img]);
      link.href = partURL(hex, mime);
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      fig.appendChild(link);
    } else {
      const a = el("a", "download", "download " + (mime || "part"));
      a.href = partURL(hex, "");
      a.download = "sha256-" + hex;
      fig.appendChild(a);
    }
    const kind = typeof p.type === "string" && p.type !== "uri" ? p.type : (typeof p.modality === "string" ? p.modality : "part");
    const size = Number(p.size) > 0 ? fmtInt(p.size) + " bytes" : "";
    fig.appendChild(el("figcaption", "", [kind, mime || "no type", size, "sha256:" + hex.slice(0, 12) + "…"].filter(Boolean).join(" · ")));
    return fig;
  }

  // partsIn collects the objects of a decoded JSON value whose uri is a
  // part reference.
  function partsIn(v, out, depth) {
    if (depth > 32 || v === null || typeof v !== "object") return out;
    if (Array.isArray(v)) {
      for (const e of v) partsIn(e, out, depth + 1);
      return out;
    }
    if (typeof v.uri === "string" && PART_REF.test(v.uri)) out.push(v);
    for (const k of Object.keys(v)) partsIn(v[k], out, depth + 1);
    return out;
  }

  // partsOfText finds the parts of an attribute value: from its JSON
  // when it parses, else (a cut value) the bare references, without types.
  function partsOfText(text) {
    try {
      return partsIn(JSON.parse(text), [], 0);
    } catch (e) {
      const out = [];
      for (const m of String(text).matchAll(PART_REFS)) out.push({ uri: "artifact:sha256:" + m[1] });
      return out;
    }
  }

  // partsBlock shows parts, each reference once; null when there is none.
  function partsBlock(parts) {
    const box = el("div", "parts");
    const seen = new Set();
    for (const p of parts) {
      if (seen.has(p.uri)) continue;
      seen.add(p.uri);
      const v = partView(p);
      if (v) box.appendChild(v);
    }
    return box.firstChild ? box : null;
  }

  function kvTable(rows) {
    const t = el("table", "kv");
    const body = el("tbody");
    for (const [k, v, cls] of rows) body.appendChild(el("tr", cls || "", null, [el("td", "", k), el("td", "", v)]));
    t.appendChild(body);
    return t;
  }

  function showSpan(span) {
    const p = $("panel");
    clear(p);
    p.appendChild(el("h2", "", span.name));
    const rows = [
      ["operation", span.operation || "-"],
      ["kind", span.kind],
      ["status", span.status + (span.status_message.value ? ": " + span.status_message.value : ""), span.failed ? "failed" : ""],
      ["start", "+" + fmtMS(span.offset_ms)],
      ["duration", fmtMS(span.duration_ms)],
      ["span id", span.span_id],
      ["parent id", span.parent_id || "-"],
      ["service", span.service || "-"],
    ];
    const et = attr(span, "error.type");
    if (et) rows.push(["error.type", et.value, "failed"]);
    p.appendChild(kvTable(rows));

    if (span.usage) {
      p.appendChild(el("h3", "", "Usage"));
      const u = span.usage;
      const box = kvTable([
        ["input tokens", fmtInt(u.input)],
        ["cache read", fmtInt(u.cache_read)],
        ["cache write", fmtInt(u.cache_creation)],
        ["output tokens", fmtInt(u.output)],
        ["reasoning", fmtInt(u.reasoning)],
      ]);
      box.id = "usage";
      p.appendChild(box);
    }

    const changed = attr(span, "harnessx.prefix_key.changed");
    const broke = changed ? parseList(changed.value) : [];
    const parts = ["model", "tools", "system", "messages"].filter((k) => attr(span, "harnessx.prefix_key." + k));
    if (attr(span, "harnessx.prefix_key") || parts.length) {
      p.appendChild(el("h3", "", "Prompt-cache prefix key"));
      const rows = [];
      const key = attr(span, "harnessx.prefix_key");
      if (key) rows.push(["key", key.value]);
      for (const k of parts) {
        const isBroken = broke.includes(k);
        rows.push([k + (isBroken ? " (changed: broke the cache)" : ""), attr(span, "harnessx.prefix_key." + k).value, isBroken ? "changed" : ""]);
      }
      const box = kvTable(rows);
      box.id = "prefix-key";
      p.appendChild(box);
      if (broke.length) p.appendChild(el("p", "changed", "cache break: " + broke.join(", ")));
    }

    const sections = [
      ["System prompt", "gen_ai.system_instructions"],
      ["Input messages", "gen_ai.input.messages"],
      ["Output messages", "gen_ai.output.messages"],
      ["Tool definitions", "gen_ai.tool.definitions"],
      ["Tool arguments", "gen_ai.tool.call.arguments"],
      ["Tool result", "gen_ai.tool.call.result"],
    ];
    for (const [title, key] of sections) {
      const a = attr(span, key);
      if (!a) continue;
      p.appendChild(el("h3", "", title));
      const parts = partsBlock(partsOfText(a.value));
      if (parts) p.appendChild(parts);
      p.appendChild(valueBlock(a));
    }

    if (span.events.length) {
      p.appendChild(el("h3", "", "Events"));
      for (const ev of span.events) {
        p.appendChild(el("p", "", ev.name + " at +" + fmtMS(ev.offset_ms)));
        for (const a of ev.attrs) p.appendChild(kvTable([[a.key, a.value]]));
      }
    }

    p.appendChild(el("h3", "", "All attributes"));
    const all = el("div");
    all.id = "attributes";
    for (const a of span.attrs) {
      all.appendChild(el("div", "attr-key", a.key + " (" + a.type + ")"));
      all.appendChild(valueBlock(a));
    }
    p.appendChild(all);
  }

  // parseList reads a string array attribute (sent as JSON) or a plain
  // comma-separated string.
  function parseList(s) {
    try {
      const v = JSON.parse(s);
      if (Array.isArray(v)) return v.map(String);
    } catch (e) { /* plain string */ }
    return s.split(",").map((x) => x.trim()).filter(Boolean);
  }

  async function showRun(key) {
    current = "run:" + key;
    const wf = $("waterfall");
    clear(wf);
    clear($("incident"));
    let data;
    try {
      data = await getJSON("/api/runs/" + encodeURIComponent(key));
    } catch (err) {
      setStatus(String(err));
      return;
    }
    const run = data.run;
    const title = $("view-title");
    clear(title);
    title.appendChild(el("h2", "", run.name));
    title.appendChild(el("p", run.errors > 0 ? "failed" : "",
      "run " + run.id + " · " + run.status + " · " + fmtMS(run.duration_ms) + " · " + run.spans + " spans · tokens in " +
      fmtInt(run.usage.input) + " (cache read " + fmtInt(run.usage.cache_read) + ") out " + fmtInt(run.usage.output) +
      (run.cache_breaks && run.cache_breaks.length ? " · cache break: " + run.cache_breaks.join(", ") : "")));
    const total = Math.max(run.duration_ms, 0.001);
    let first = null;
    for (const s of data.spans) {
      const row = el("div", "span-row op-" + (s.operation || "other") + (s.failed ? " failed" : ""));
      row.dataset.depth = String(s.depth);
      row.dataset.spanId = s.span_id;
      row.dataset.parentId = s.parent_id;
      row.dataset.name = s.name;
      const label = el("div", "span-label", (s.failed ? "✗ " : "") + s.name);
      label.style.paddingLeft = (s.depth * 16) + "px";
      label.title = s.name;
      const track = el("div", "span-track");
      const bar = el("div", "bar");
      const left = Math.min(100, Math.max(0, (s.offset_ms / total) * 100));
      bar.style.left = left + "%";
      bar.style.width = Math.max(0.2, Math.min(100 - left, (s.duration_ms / total) * 100)) + "%";
      track.appendChild(bar);
      row.appendChild(label);
      row.appendChild(track);
      row.appendChild(el("div", "span-dur", fmtMS(s.duration_ms)));
      row.addEventListener("click", () => {
        for (const r of wf.querySelectorAll(".span-row.selected")) r.classList.remove("selected");
        row.classList.add("selected");
        showSpan(s);
      });
      wf.appendChild(row);
      if (!first) first = [row, s];
    }
    for (const tr of $("runs").tBodies[0].rows) tr.classList.toggle("selected", tr.dataset.key === key);
    if (first) {
      first[0].classList.add("selected");
      showSpan(first[1]);
    }
  }

  async function showIncident(rec, name) {
    current = "inc:" + rec + "/" + name;
    clear($("waterfall"));
    clear($("panel"));
    const box = $("incident");
    clear(box);
    const title = $("view-title");
    clear(title);
    title.appendChild(el("h2", "", "incident " + rec + " / " + name));
    let data;
    try {
      data = await getJSON("/api/incidents/" + encodeURIComponent(rec) + "/" + encodeURIComponent(name));
    } catch (err) {
      setStatus(String(err));
      return;
    }
    if (data.error) box.appendChild(el("p", "failed", data.error));
    box.appendChild(el("p", data.verified ? "" : "failed", data.verified ? "checksums verified" : "verification FAILED"));
    for (const pr of data.problems) box.appendChild(el("p", "failed", pr.member + ": " + pr.reason));
    if (data.manifest) {
      box.appendChild(el("h3", "", "Manifest"));
      box.appendChild(el("pre", "", JSON.stringify(data.manifest, null, 2)));
    }
    box.appendChild(el("h3", "", "Events"));
    const t = el("table", "events");
    t.appendChild(el("thead", "", null, [el("tr", "", null, [
      el("th", "", "time"), el("th", "", "kind"), el("th", "", "step"), el("th", "", "detail")])]));
    const body = el("tbody");
    for (const e of data.events) {
      const detail = [e.status, e.model, e.tool, e.call_id, e.text, e.error ? "error: " + e.error : ""].filter(Boolean).join("  ");
      const failed = !!e.error || e.status === "failed" || e.kind === "error";
      const cell = el("td", "", detail);
      const parts = Array.isArray(e.parts) ? partsBlock(e.parts) : null;
      if (parts) cell.appendChild(parts);
      body.appendChild(el("tr", failed ? "failed" : "", null, [
        el("td", "", fmtTime(e.time)), el("td", "", e.kind), el("td", "num", e.step || ""), cell]));
    }
    t.appendChild(body);
    box.appendChild(t);
    if (data.events_not_shown) box.appendChild(el("p", "note", fmtInt(data.events_not_shown) + " more events not shown"));
  }

  function route() {
    const h = location.hash.replace(/^#/, "");
    if (h.startsWith("run=")) {
      showRun(decodeURIComponent(h.slice(4)));
    } else if (h.startsWith("incident=")) {
      const [rec, name] = h.slice(9).split("/").map(decodeURIComponent);
      showIncident(rec, name);
    }
  }

  $("refresh").addEventListener("click", () => { loadList(); });
  window.addEventListener("hashchange", route);
  loadList().then(route);
  setInterval(() => { if (!document.hidden) loadList(); }, 5000);
})();
