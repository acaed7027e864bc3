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
  const page = { offset: 0, limit: 50, total: 0 };

  // label builds a key label whose dotted or underscored names may break
  // after a dot or underscore (a <wbr>), never inside a word.
  function label(cls, text) {
    const e = el("span", cls);
    const parts = String(text).split(/(?<=[._])/);
    parts.forEach((p, i) => {
      e.appendChild(document.createTextNode(p));
      if (i < parts.length - 1) e.appendChild(document.createElement("wbr"));
    });
    return e;
  }

  // stateCell shows a run's or span's state: ok, error, or another run
  // status (paused, cancelled, …).
  function stateCell(state) {
    return el("td", "state state-" + (state === "ok" || state === "error" ? state : "other"), state);
  }

  function timeCell(s) {
    const t = fmtTime(s);
    const [day, clock] = t.split(" ");
    const td = el("td", "time");
    td.appendChild(el("span", "", clock ? clock.replace(/\.\d+$/, "") : t));
    if (clock) td.appendChild(el("span", "sub", day));
    td.title = t;
    return td;
  }

  function runHash(key) {
    return "#run=" + encodeURIComponent(key);
  }

  function incidentHash(rec, name) {
    return "#incident=" + encodeURIComponent(rec) + "/" + encodeURIComponent(name);
  }

  function link(text, href, cls) {
    const a = el("a", cls || "", text);
    a.href = href;
    return a;
  }

  async function loadList() {
    let data;
    try {
      data = await getJSON("/api/runs?offset=" + page.offset + "&limit=" + page.limit);
    } catch (err) {
      setStatus(String(err));
      return;
    }
    page.total = data.total;
    if (page.offset > 0 && page.offset >= data.total) {
      page.offset = Math.max(0, data.total - page.limit);
      return loadList();
    }
    const body = $("runs").tBodies[0];
    clear(body);
    for (const r of data.runs) {
      const open = () => { location.hash = runHash(r.key); };
      const tr = el("tr", "run" + (r.errors > 0 ? " failed" : ""), null, [
        timeCell(r.start),
        el("td", "agent", null, [el("div", "", r.agent)]),
        stateCell(r.state),
        el("td", "num dur", fmtMS(r.duration_ms)),
        el("td", "num spans", r.spans),
        el("td", "num tokens", fmtInt(r.usage.input) + " / " + fmtInt(r.usage.output)),
        el("td", "num cost", r.cost || "–"),
        el("td", "num errors" + (r.errors > 0 ? " failed" : ""), String(r.errors)),
      ]);
      tr.dataset.key = r.key;
      tr.dataset.runId = r.id;
      tr.dataset.agent = r.agent;
      tr.addEventListener("click", open);
      body.appendChild(tr);
      // What failed, named, on a line of its own under the run.
      if (r.errors > 0 && r.error_label) {
        const detail = el("tr", "error-row failed", null, [el("td", "", r.error_label)]);
        detail.cells[0].colSpan = 8;
        detail.dataset.key = r.key;
        detail.addEventListener("click", open);
        body.appendChild(detail);
      }
    }
    for (const tr of body.rows) tr.classList.toggle("selected", current === "run:" + tr.dataset.key);
    $("no-runs").hidden = data.total > 0;
    const first = data.runs.length ? data.offset + 1 : 0;
    $("page-info").textContent = fmtInt(first) + "–" + fmtInt(data.offset + data.runs.length) + " of " + fmtInt(data.total);
    $("newer").disabled = data.offset === 0;
    $("older").disabled = data.offset + data.runs.length >= data.total;
    const incs = $("incidents").tBodies[0];
    clear(incs);
    for (const inc of data.incidents) {
      const runs = inc.failed_run || (inc.run_ids && inc.run_ids.length ? inc.run_ids[inc.run_ids.length - 1] : "");
      const tr = el("tr", inc.error ? "failed" : "", null, [
        timeCell(inc.created && !inc.created.startsWith("0001") ? inc.created : inc.modified),
        el("td", "", inc.reason || "-"),
        el("td", "", runs || "-"),
        el("td", "", inc.error || "-"),
      ]);
      tr.dataset.recording = inc.recording;
      tr.dataset.name = inc.name;
      tr.title = inc.recording + " / " + inc.name;
      if (current === "inc:" + inc.recording + "/" + inc.name) tr.classList.add("selected");
      tr.addEventListener("click", () => { location.hash = incidentHash(inc.recording, inc.name); });
      incs.appendChild(tr);
    }
    $("no-incidents").hidden = data.incidents.length > 0;
    const probs = $("problems");
    clear(probs);
    for (const p of data.problems) probs.appendChild(el("li", "failed", p));
    $("problems-box").hidden = data.problems.length === 0;
    setStatus(fmtInt(data.total) + (data.total === 1 ? " run" : " runs") + ", updated " + new Date().toLocaleTimeString());
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

  // kvTable shows [label, value, class] rows; a value may be a node.
  function kvTable(rows) {
    const t = el("table", "kv");
    const body = el("tbody");
    for (const [k, v, cls] of rows) {
      const val = el("td");
      if (v instanceof Node) val.appendChild(v); else val.textContent = String(v);
      body.appendChild(el("tr", cls || "", null, [el("td", "", null, [label("label", k)]), val]));
    }
    t.appendChild(body);
    return t;
  }

  function showSpan(span, runSpans) {
    const p = $("panel");
    clear(p);
    p.appendChild(el("h2", "", span.name));
    const rows = [
      ["operation", span.operation || "-"],
      ["kind", span.kind],
      ["status", span.status + (span.failed && span.status_message.value ? ": " + span.status_message.value : ""), span.failed ? "failed" : ""],
      ["start", "+" + fmtMS(span.offset_ms)],
      ["duration", fmtMS(span.duration_ms)],
      ["span id", span.span_id],
      ["parent id", span.parent_id || "-"],
      ["service", span.service || "-"],
    ];
    if (span.failed && span.error_label) rows.push(["error", span.error_label, "failed"]);
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
        ["cost", span.cost || "no price"],
      ]);
      box.id = "usage";
      p.appendChild(box);
    }

    const changed = attr(span, "harnessx.prefix_key.changed");
    const broke = changed ? parseList(changed.value) : [];
    const partNames = ["model", "tools", "system", "messages"];
    const partsOf = (s) => partNames.filter((k) => attr(s, "harnessx.prefix_key." + k));
    const hasParts = (s) => partsOf(s).length > 0;
    if (attr(span, "harnessx.prefix_key") || hasParts(span)) {
      p.appendChild(el("h3", "", "Prompt-cache prefix key"));
      const rows = [];
      const key = attr(span, "harnessx.prefix_key");
      if (key) rows.push(["key", key.value]);
      // A request that kept the prefix carries the key alone: its parts
      // are those of the latest earlier span of the session that records
      // them (its first request or its last cache break).
      let from = null;
      if (!hasParts(span)) {
        const conv = attr(span, "gen_ai.conversation.id");
        for (const s of runSpans || []) {
          if (s === span || s.offset_ms > span.offset_ms || !hasParts(s)) continue;
          const c = attr(s, "gen_ai.conversation.id");
          if ((c && c.value) !== (conv && conv.value)) continue;
          if (!from || s.offset_ms >= from.offset_ms) from = s;
        }
        rows.push(["parts", from
          ? "no cache break: as recorded on " + from.name + " at +" + fmtMS(from.offset_ms)
          : "no cache break: as in the session's previous request (part hashes are recorded on its first request and at each break)"]);
      }
      const src = from || span;
      for (const k of partsOf(src)) {
        const isBroken = !from && broke.includes(k);
        rows.push([k + (isBroken ? " (changed: broke the cache)" : ""), attr(src, "harnessx.prefix_key." + k).value, isBroken ? "changed" : ""]);
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
        p.appendChild(kvTable(ev.attrs.map((a) => [a.key, a.value])));
      }
    }

    p.appendChild(el("h3", "", "All attributes"));
    const all = el("div");
    all.id = "attributes";
    for (const a of span.attrs) {
      all.appendChild(label("attr-key", a.key + " (" + a.type + ")"));
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
    const head = el("p", "run-head" + (run.errors > 0 ? " failed" : ""));
    head.id = "run-head";
    const bits = [
      "run " + run.id,
      null, // the state, in its own span
      fmtMS(run.duration_ms),
      run.spans + " spans",
      "tokens in " + fmtInt(run.usage.input) + " (cache read " + fmtInt(run.usage.cache_read) + ") out " + fmtInt(run.usage.output),
      "cost " + (run.cost || "–") + (run.unpriced_requests ? " (" + run.unpriced_requests + " requests without a price)" : ""),
    ];
    if (run.errors > 0) bits.push(run.errors + (run.errors === 1 ? " error" : " errors") + (run.error_label ? ": " + run.error_label : ""));
    if (run.cache_breaks && run.cache_breaks.length) bits.push("cache break: " + run.cache_breaks.join(", "));
    bits.forEach((b, i) => {
      if (i > 0) head.appendChild(document.createTextNode(" · "));
      if (b === null) head.appendChild(el("span", "state state-" + run.state, run.state));
      else head.appendChild(el("span", "", b));
    });
    title.appendChild(head);
    if (data.incidents && data.incidents.length) {
      const links = el("p", "run-links");
      links.id = "run-incidents";
      links.appendChild(document.createTextNode("incident bundles: "));
      for (const inc of data.incidents) {
        links.appendChild(link(inc.name + (inc.reason ? " (" + inc.reason + ")" : ""), incidentHash(inc.recording, inc.name), "incident-link"));
      }
      title.appendChild(links);
    }
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
        showSpan(s, data.spans);
      });
      wf.appendChild(row);
      if (!first) first = [row, s];
    }
    for (const tr of $("runs").tBodies[0].rows) tr.classList.toggle("selected", tr.dataset.key === key);
    for (const tr of $("incidents").tBodies[0].rows) tr.classList.remove("selected");
    if (first) {
      first[0].classList.add("selected");
      showSpan(first[1], data.spans);
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
    for (const tr of $("incidents").tBodies[0].rows) tr.classList.toggle("selected", tr.dataset.recording === rec && tr.dataset.name === name);
    for (const tr of $("runs").tBodies[0].rows) tr.classList.remove("selected");
    let data;
    try {
      data = await getJSON("/api/incidents/" + encodeURIComponent(rec) + "/" + encodeURIComponent(name));
    } catch (err) {
      setStatus(String(err));
      return;
    }
    const inc = data.incident;
    const runs = el("span");
    for (const r of data.runs) {
      if (r.key) runs.appendChild(link(r.id, runHash(r.key), "run-link" + (r.id === inc.failed_run ? " failed" : "")));
      else runs.appendChild(el("span", "", r.id + " (no spans) "));
    }
    if (!data.runs.length) runs.textContent = "-";
    const facts = kvTable([
      ["trigger", inc.reason || "-"],
      ["time", fmtTime(inc.created && !inc.created.startsWith("0001") ? inc.created : inc.modified)],
      ["agent", inc.agent || "-"],
      ["run", runs],
      ["error", inc.error ? (inc.failed_run ? inc.failed_run + ": " : "") + inc.error : "-", inc.error ? "failed" : ""],
      ["checksums", data.verified ? "verified" : "verification FAILED", data.verified ? "" : "failed"],
      ["events", data.manifest ? fmtInt(data.manifest.events) : "-"],
      ["spans", data.manifest ? fmtInt(data.manifest.spans) : "-"],
    ]);
    facts.id = "incident-facts";
    box.appendChild(facts);
    if (data.error) box.appendChild(el("p", "failed", data.error));
    for (const pr of data.problems) box.appendChild(el("p", "failed", pr.member + ": " + pr.reason));

    box.appendChild(el("h3", "", "Files"));
    const files = el("table", "files");
    files.id = "incident-files";
    files.appendChild(el("thead", "", null, [el("tr", "", null, [el("th", "", "file"), el("th", "num", "bytes"), el("th", "", "sha256")])]));
    const fbody = el("tbody");
    for (const f of data.files) {
      const sum = el("td", f.note ? "note" : "", f.note || (f.sha256 ? f.sha256.slice(0, 16) + "…" : ""));
      if (f.sha256) sum.title = f.sha256;
      fbody.appendChild(el("tr", "", null, [el("td", "", f.name), el("td", "num", f.note ? "" : fmtInt(f.size)), sum]));
    }
    files.appendChild(fbody);
    box.appendChild(files);

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
    if (data.manifest) {
      const raw = el("details");
      raw.appendChild(el("summary", "", "manifest.json"));
      raw.appendChild(el("pre", "", JSON.stringify(data.manifest, null, 2)));
      box.appendChild(raw);
    }
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
  $("newer").addEventListener("click", () => { page.offset = Math.max(0, page.offset - page.limit); loadList(); });
  $("older").addEventListener("click", () => { if (page.offset + page.limit < page.total) page.offset += page.limit; loadList(); });
  $("page-size").addEventListener("change", (ev) => { page.limit = Number(ev.target.value) || 50; page.offset = 0; loadList(); });
  window.addEventListener("hashchange", route);
  loadList().then(route);
  setInterval(() => { if (!document.hidden) loadList(); }, 5000);
})();
