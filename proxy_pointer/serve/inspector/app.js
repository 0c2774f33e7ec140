// The proxy-pointer inspector: plain DOM, no framework, no build step.
//
// Every piece of data reaches the page as text (textContent, or a string passed to
// append()), never as HTML. Every request is a relative URL to the server that served this
// page, so the inspector also works behind a path prefix.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const COLORS = 8; // segment colours c0..c7, shared by the budget bar and the rank badges
  const GAP = 8; // a run of more left-out lines than this is folded, keeping 2 each side
  const KEEP = 2;

  // --- small helpers ---------------------------------------------------------------------
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child); // strings become text
    }
    return node;
  }

  const fmt = (n) => (typeof n === "number" ? n.toLocaleString("en") : "?");
  const pages = (p) => (p ? (p[0] === p[1] ? `p. ${p[0]}` : `p. ${p[0]}-${p[1]}`) : "");
  const refURL = (ref) => `sections?ref=${encodeURIComponent(ref)}`;
  const inSpans = (spans, n) => (spans || []).some(([a, b]) => a <= n && n <= b);

  // A link that opens a ref in the page (and, without the script, its JSON).
  function refLink(ref, label) {
    return el("a", { href: refURL(ref), class: label ? null : "ref", "data-ref": ref,
      text: label || ref });
  }

  // A bearer token for a server started with --tokens: typed into the field, or handed
  // over once in the URL fragment (#token=..., which is never sent to the server, and is
  // removed from the address at once); kept for this tab only.
  const TOKEN_KEY = "proxy-pointer-token";
  const handed = new URLSearchParams(location.hash.slice(1)).get("token");
  if (handed) {
    sessionStorage.setItem(TOKEN_KEY, handed);
    history.replaceState(history.state, "", location.pathname + location.search);
  }

  async function api(path, options) {
    const token = sessionStorage.getItem(TOKEN_KEY);
    const headers = { ...((options && options.headers) || {}) };
    if (token) headers.Authorization = `Bearer ${token}`;
    let response;
    try {
      response = await fetch(path, { ...(options || {}), headers });
    } catch (err) {
      throw new Error(`could not reach the server (${err.message})`);
    }
    let body = null;
    try {
      body = await response.json();
    } catch (err) {
      body = null; // not JSON: the status line says what happened
    }
    if (!response.ok) {
      const message = body && typeof body.error === "string" ? body.error
        : `${response.status} ${response.statusText}`;
      throw new Error(message);
    }
    return body;
  }

  function showError(message) {
    const box = $("error");
    box.textContent = message ? `Error: ${message}` : "";
    box.hidden = !message;
  }

  const setStatus = (text) => { $("status").textContent = text; };

  // --- the query's state lives in the URL ------------------------------------------------
  function readURL() {
    const p = new URLSearchParams(window.location.search);
    return {
      q: p.get("q") || "",
      budget: p.get("budget") || "",
      k: p.get("k") || "",
      mode: p.get("mode") || "",
      docs: p.getAll("doc"),
    };
  }

  function toURL(state) {
    const p = new URLSearchParams();
    if (state.q) p.set("q", state.q);
    for (const name of ["budget", "k", "mode"]) if (state[name]) p.set(name, state[name]);
    for (const doc of state.docs) p.append("doc", doc);
    const query = p.toString();
    return query ? `?${query}` : window.location.pathname;
  }

  function fillForm(state) {
    $("q").value = state.q;
    $("budget").value = state.budget;
    $("k").value = state.k;
    $("mode").value = state.mode;
    for (const box of document.querySelectorAll("#doc-filter input[name=doc]")) {
      box.checked = state.docs.includes(box.value);
    }
  }

  function formState() {
    const docs = [...document.querySelectorAll("#doc-filter input[name=doc]:checked")]
      .map((box) => box.value);
    return {
      q: $("q").value, budget: $("budget").value.trim(), k: $("k").value.trim(),
      mode: $("mode").value, docs,
    };
  }

  function payload(state) {
    const body = { question: state.q };
    for (const name of ["budget", "k"]) {
      if (state[name] === "") continue;
      const n = Number(state[name]);
      body[name] = Number.isInteger(n) ? n : state[name]; // the server says what is wrong
    }
    if (state.mode) body.mode = state.mode;
    if (state.docs.length) body.doc_ids = state.docs;
    return body;
  }

  // --- the index: health, documents, trees -----------------------------------------------
  async function loadHealth() {
    try {
      const h = await api("healthz");
      $("health").textContent = `${fmt(h.documents)} documents · ${fmt(h.chunks)} chunks · `
        + `${h.embedder} · generation ${h.generation}`;
    } catch (err) {
      $("health").textContent = `index unavailable: ${err.message}`;
    }
  }

  async function loadDocuments(state) {
    let data;
    try {
      data = await api("documents");
    } catch (err) {
      showError(err.message);
      return;
    }
    const list = $("documents");
    const filter = $("doc-filter");
    list.replaceChildren();
    filter.replaceChildren();
    for (const d of data.documents) {
      const meta = [d.doc_id, `${fmt(d.n_chunks)} chunks`];
      if (d.pages) meta.push(`${fmt(d.pages)} pages`);
      // The card: what the document is (entity, kind, period), as routing reads it.
      const card = d.card || {};
      const about = [card.entity, card.kind, card.period].filter(Boolean).join(" · ");
      if (about) meta.splice(1, 0, about);
      const details = el("details", { class: "document", "data-doc": d.doc_id },
        el("summary", {},
          el("span", { class: "doc-title", text: d.title || d.doc_id }),
          el("span", { class: "doc-meta", text: meta.join(" · ") })),
        el("div", { class: "tree-box muted small", text: "Loading the tree…" }));
      details.addEventListener("toggle", () => {
        if (details.open && !details.dataset.loaded) {
          details.dataset.loaded = "yes";
          loadTree(details, d.doc_id);
        }
      });
      list.append(el("li", {}, details));
      filter.append(el("label", { title: d.title || d.doc_id },
        el("input", { type: "checkbox", name: "doc", value: d.doc_id }), ` ${d.doc_id}`));
    }
    if (!data.documents.length) {
      list.append(el("li", { class: "muted", text: "The index holds no documents." }));
    }
    fillForm(state);
    markRouted();
  }

  async function loadTree(details, docId) {
    const box = details.querySelector(".tree-box");
    try {
      const tree = await api(`documents/${docId.split("/").map(encodeURIComponent).join("/")}/tree`);
      box.className = "tree-box";
      box.replaceChildren(renderTree(tree));
      markHits();
    } catch (err) {
      box.className = "tree-box error";
      box.textContent = err.message;
    }
  }

  function renderTree(tree) {
    const ids = new Set(tree.nodes.map((n) => n.node_id));
    const children = new Map();
    for (const n of tree.nodes) {
      const parent = n.parent_id && ids.has(n.parent_id) ? n.parent_id : "";
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(n);
    }
    const build = (nodes) => {
      const ul = el("ul", { class: "tree" });
      for (const n of nodes) {
        const li = el("li", { class: n.skipped ? "skipped" : null },
          refLink(n.ref, n.title || "(before the first heading)"),
          " ",
          el("span", { class: "lines", text: `L${n.start_line}-${n.end_line}` }));
        if (n.pages) li.append(" ", el("span", { class: "pages", text: pages(n.pages) }));
        if (n.skipped) {
          const kind = n.skipped.startsWith("noise") ? n.skipped.split(" (")[0] : "short";
          li.append(" ", el("span", { class: "badge", title: `skipped: ${n.skipped}`,
            text: `skipped: ${kind}` }));
        }
        const kids = children.get(n.node_id);
        if (kids) li.append(build(kids));
        ul.append(li);
      }
      return ul;
    };
    return build(children.get("") || []);
  }

  // --- a query ---------------------------------------------------------------------------
  let current = null; // the payload on screen
  let latest = 0; // a later query wins over one still in flight

  async function run(state) {
    const mine = ++latest;
    showError("");
    if (!state.q) {
      $("results").hidden = true;
      setStatus("");
      return;
    }
    document.title = `${state.q} · proxy-pointer inspector`;
    setStatus("Searching…");
    $("results").setAttribute("aria-busy", "true");
    try {
      const data = await api("query", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(payload(state)),
      });
      if (mine !== latest) return;
      current = data;
      render(data);
      setStatus(`${data.contexts.length} sections for “${data.question}”`);
    } catch (err) {
      if (mine !== latest) return;
      current = null;
      $("results").hidden = true;
      setStatus("");
      showError(err.message);
    } finally {
      if (mine === latest) $("results").removeAttribute("aria-busy");
    }
  }

  // The "Only in" list marks the documents the last question was routed to (again when
  // the list arrives after the answer).
  let routedTo = [];
  function markRouted() {
    for (const label of $("doc-filter").querySelectorAll("label")) {
      const box = label.querySelector("input");
      const on = routedTo.includes(box ? box.value : "");
      label.classList.toggle("routed", on);
      const mark = label.querySelector(".routed-mark");
      if (on && !mark) label.append(el("span", { class: "routed-mark", text: " (routed)" }));
      if (!on && mark) mark.remove();
    }
  }

  function render(data) {
    renderBudget(data);
    // Which documents the question's names and period sent it to, and what is missing.
    // Not routed is said too, with why: no name the cards know, or none of their documents.
    const r = data.routing || {};
    const routed = r.documents || [];
    const routing = $("routing");
    const asked = [(r.names || []).join(", "), r.period, r.kind].filter(Boolean).join(", ");
    routing.hidden = false;
    routing.classList.toggle("unrouted", !routed.length);
    routing.textContent = (routed.length
      ? `Routed by ${asked || "what the filings hold"} to ${routed.join(", ")}.`
      : (r.names || []).length
        ? `Not routed: ${asked} fits no document's card, so every document was searched.`
        : "Not routed: the question names no company, ticker or alias a document's card "
          + "knows, so every document was searched.")
      + (r.note ? ` ${r.note}` : "");
    routedTo = routed;
    markRouted();
    // What the question was expanded with: concepts, the statements they need, synonyms.
    const e = data.expansion || {};
    const expansion = $("expansion");
    const said = [];
    if ((e.concepts || []).length) {
      const found = (e.sections || []).length ? ` (found as ${e.sections.join(", ")})`
        : " (not found as sections)";
      said.push(`Concept ${e.concepts.join(", ")}: ${e.statements.join(", ")}${found}`);
    }
    if ((e.items || []).length) said.push(`line items ${e.items.join(", ")}`);
    for (const s of e.synonyms || []) {
      said.push(`synonyms ${s.written} ${s.replaced ? "=>" : "+"} ${s.added.join(", ")}`);
    }
    expansion.hidden = !said.length;
    expansion.textContent = said.length ? `${said.join("; ")}.` : "";
    const list = $("sections");
    list.replaceChildren();
    data.contexts.forEach((c, i) => list.append(renderContext(c, i)));
    if (!data.contexts.length) {
      list.append(el("li", { class: "muted", text: "No section was retrieved." }));
    }
    const omitted = $("omitted");
    omitted.replaceChildren();
    for (const ref of data.omitted || []) omitted.append(el("li", {}, refLink(ref)));
    $("omitted-box").hidden = !(data.omitted || []).length;
    $("results").hidden = false;
    markHits();
    // The best section's document opens in the sidebar, its hits marked in the tree.
    const top = data.contexts[0];
    const doc = top && [...document.querySelectorAll("#documents details[data-doc]")]
      .find((d) => d.dataset.doc === top.doc_id);
    if (doc) doc.open = true;
  }

  function renderBudget(data) {
    const bar = $("budget-bar");
    bar.replaceChildren();
    const used = data.tokens_used;
    const unused = Math.max(data.budget - used, 0);
    const scale = Math.max(data.budget, used, 1);
    const segment = (tokens, cls, title, label) => {
      const share = (100 * tokens) / scale;
      // A label only where it fits; the title (and the totals below) say it anyway.
      const seg = el("span", { class: `seg ${cls}`, title },
        el("span", { class: "seg-label", text: share >= label.length * 0.9 ? label : "" }));
      seg.style.width = `${share}%`;
      bar.append(seg);
    };
    data.contexts.forEach((c, i) => segment(c.tokens, `c${i % COLORS}`,
      `${i + 1}. ${c.title || c.ref}: ${fmt(c.tokens)} tokens`, String(i + 1)));
    if (unused > 0) segment(unused, "unused", `unused: ${fmt(unused)} tokens`, "unused");
    const n = data.contexts.length;
    bar.setAttribute("aria-label", `${fmt(used)} of ${fmt(data.budget)} tokens used by ${n} `
      + `sections, ${fmt(unused)} unused`);
    const share = data.budget ? Math.round((100 * used) / data.budget) : 0;
    const totals = $("budget-totals");
    totals.replaceChildren(
      el("strong", { text: `${fmt(used)} / ${fmt(data.budget)} tokens` }),
      ` used (${share}%) · ${fmt(unused)} unused · ${n} section${n === 1 ? "" : "s"}`);
    const left = (data.omitted || []).length;
    if (left) totals.append(` · ${left} left out by the budget`);
  }

  function fact(term, ...value) {
    return el("div", {}, el("dt", { text: term }), el("dd", {}, ...value));
  }

  function renderContext(c, i) {
    const id = `r${i + 1}`;
    const facts = el("dl", { class: "facts" });
    facts.append(fact("ref", refLink(c.ref)));
    facts.append(fact("score", typeof c.score === "number" ? c.score.toFixed(4) : "?"));
    if (typeof c.relevance === "number") {
      facts.append(fact("relevance",
        el("meter", { min: 0, max: 1, value: c.relevance, title: c.relevance.toFixed(3) }),
        ` ${c.relevance.toFixed(2)}`));
    }
    facts.append(fact("tokens", fmt(c.tokens)));
    facts.append(fact("lines", `${c.start_line}-${c.end_line}`));
    if (c.pages) facts.append(fact("pages", pages(c.pages)));
    facts.append(fact("handed over", c.trimmed ? "in part (trimmed to the budget)" : "whole"));
    if ((c.also_in || []).length) {
      const also = el("span", { class: "also-in" });
      c.also_in.forEach((ref, j) => also.append(j ? ", " : "", refLink(ref)));
      facts.append(fact("also in", also));
    }
    const source = el("div", { class: "source", "aria-label": `The section's lines, ${c.ref}` },
      el("p", { class: "muted small", text: "Loading the whole section…" }));
    const article = el("article", { class: "result", "aria-labelledby": `${id}-title` },
      el("header", { class: "result-head" },
        el("span", { class: `rank c${i % COLORS}`, "aria-hidden": "true", text: String(i + 1) }),
        el("div", {},
          el("h4", { id: `${id}-title`, text: c.title || c.ref }),
          el("p", { class: "crumb", text: (c.path || []).join(" > ") }))),
      facts, source);
    loadSource(source, c);
    return el("li", { id }, article);
  }

  async function loadSource(box, c) {
    try {
      const section = await api(refURL(c.ref));
      box.replaceChildren(renderLines(section, c));
    } catch (err) {
      // Without the whole section, show what was handed over.
      box.replaceChildren(el("p", { class: "error", text: `Could not open ${c.ref}: ${err.message}` }),
        el("pre", { class: "handed", text: c.text }));
    }
  }

  // --- a section's lines, with what was handed over marked ----------------------------------
  function lineState(n, c) {
    if (!c) return "plain";
    const packed = !c.trimmed || inSpans(c.packed_spans, n);
    return `${packed ? "packed" : "left-out"}${inSpans(c.matched_spans, n) ? " matched" : ""}`;
  }

  const SAYS = {
    packed: "handed over",
    "packed matched": "handed over, matching chunk",
    "left-out": "left out by the budget",
    "left-out matched": "left out by the budget, matching chunk",
  };

  function lineRow(n, text, state) {
    const mark = el("td", { class: "mark" });
    if (SAYS[state]) mark.append(el("span", { class: "visually-hidden", text: SAYS[state] }));
    return el("tr", { class: state, "data-line": n },
      el("th", { scope: "row", class: "no", text: String(n) }), mark,
      el("td", { class: "text" }, el("code", { text: text || " " })));
  }

  function renderLines(section, c) {
    let lines = section.text.split("\n");
    const count = section.end_line - section.start_line + 1;
    if (lines.length > count) lines = lines.slice(0, count); // the text's final newline
    const states = lines.map((_, j) => lineState(section.start_line + j, c));
    const table = el("table", { class: "src" },
      el("caption", { class: "visually-hidden",
        text: `${section.ref}, lines ${section.start_line}-${section.end_line}` }));
    const body = el("tbody");
    const row = (m) => lineRow(section.start_line + m, lines[m], states[m]);
    let j = 0;
    while (j < lines.length) {
      let end = j;
      while (end < lines.length && states[end] === "left-out") end += 1;
      if (end - j > GAP) { // fold a long run of left-out lines, keeping its edges
        for (let m = j; m < j + KEEP; m++) body.append(row(m));
        const hidden = [];
        for (let m = j + KEEP; m < end - KEEP; m++) hidden.push(row(m));
        body.append(foldRow(hidden));
        for (let m = end - KEEP; m < end; m++) body.append(row(m));
        j = end;
      } else {
        const stop = Math.max(end, j + 1);
        for (let m = j; m < stop; m++) body.append(row(m));
        j = stop;
      }
    }
    table.append(body);
    return table;
  }

  function foldRow(hidden) {
    const button = el("button", { type: "button", class: "unfold",
      text: `⋯ ${hidden.length} more lines left out by the budget (show)` });
    const fold = el("tr", { class: "fold" }, el("td", { colspan: 3 }, button));
    button.addEventListener("click", () => fold.replaceWith(...hidden));
    return fold;
  }

  // --- opening a ref ---------------------------------------------------------------------
  async function openRef(ref) {
    const viewer = $("viewer");
    viewer.hidden = false;
    $("viewer-title").textContent = ref;
    $("viewer-where").textContent = "Loading…";
    $("viewer-body").replaceChildren();
    try {
      const s = await api(refURL(ref));
      $("viewer-title").textContent = s.title || s.ref;
      const where = [(s.path || []).join(" > "), s.ref, `lines ${s.start_line}-${s.end_line}`];
      if (s.pages) where.push(pages(s.pages));
      $("viewer-where").textContent = where.filter(Boolean).join(" · ");
      const context = current && current.contexts.find((c) => c.ref === s.ref);
      $("viewer-body").replaceChildren(renderLines(s, context || null));
    } catch (err) {
      $("viewer-where").textContent = "";
      $("viewer-body").replaceChildren(el("p", { class: "error", text: err.message }));
    }
    $("viewer-title").setAttribute("tabindex", "-1");
    $("viewer-title").focus();
    viewer.scrollIntoView({ block: "start" });
  }

  function markHits() {
    const hits = new Set(current ? current.contexts.map((c) => c.ref) : []);
    for (const a of document.querySelectorAll("#documents a[data-ref]")) {
      a.classList.toggle("hit", hits.has(a.dataset.ref));
    }
  }

  // --- wiring ----------------------------------------------------------------------------
  document.addEventListener("click", (ev) => {
    const link = ev.target.closest && ev.target.closest("a[data-ref]");
    if (!link || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    ev.preventDefault();
    openRef(link.dataset.ref);
  });

  $("viewer-close").addEventListener("click", () => { $("viewer").hidden = true; });

  $("search").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const state = formState();
    const url = toURL(state);
    if (url === window.location.search) window.history.replaceState(null, "", url);
    else window.history.pushState(null, "", url);
    run(state);
  });

  window.addEventListener("popstate", () => {
    const state = readURL();
    fillForm(state);
    run(state);
  });

  const initial = readURL();
  fillForm(initial);
  $("token").value = sessionStorage.getItem(TOKEN_KEY) || "";
  $("auth").addEventListener("submit", (ev) => ev.preventDefault());
  $("token").addEventListener("change", () => {
    const value = $("token").value.trim();
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
    location.reload(); // documents, trees and results as this reader sees them
  });

  loadHealth();
  loadDocuments(initial);
  if (initial.q) run(initial);
})();
