// agentgym view: the episode table, conversations, plots tabs and side-by-side comparison.
// Every value from a run is shown through textContent (never innerHTML): run files are data, not markup.
"use strict";
(function () {
  const boot = JSON.parse(document.getElementById("boot").textContent);
  const embedded = boot.mode === "static" ? JSON.parse(document.getElementById("data").textContent) : null;
  const PAGE = 100;
  let columns = [];
  let all = [];          // one object per episode of every run: {run, index, ...row}
  let shown = [];        // after the filters
  let page = 0;
  const filters = {run: "", env: "", family: "", difficulty: "", split: "", success: "", diagnosis: "", text: ""};

  function el(tag, props, children) {
    const node = document.createElement(tag);
    if (props) {
      for (const key of Object.keys(props)) {
        if (key === "text") node.textContent = String(props[key]);
        else if (key === "cls") node.className = props[key];
        else if (key === "on") for (const ev of Object.keys(props.on)) node.addEventListener(ev, props.on[ev]);
        else node.setAttribute(key, String(props[key]));
      }
    }
    for (const child of children || []) if (child !== null && child !== undefined) node.appendChild(child);
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function fmt(value, digits) {
    if (value === null || value === undefined) return "-";
    if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toFixed(digits || 3);
    return String(value);
  }

  async function getRows() {
    if (embedded) return embedded;
    const response = await fetch("api/rows");
    if (!response.ok) throw new Error("could not load the episode index: " + response.status);
    return response.json();
  }
  async function getEpisode(run, index) {
    if (embedded) return embedded.episodes[run][index];
    const response = await fetch("api/episode?run=" + run + "&index=" + index);
    if (!response.ok) throw new Error("could not load episode " + index + ": " + (await response.text()));
    return response.json();
  }

  // ---- filters and table -------------------------------------------------------------------------------
  function distinct(key) { return Array.from(new Set(all.map((row) => String(row[key])))).sort(); }
  function select(key, label, options) {
    const node = el("select", {id: "filter-" + key, "aria-label": label,
      on: {change: (event) => { filters[key] = event.target.value; page = 0; apply(); }}},
      [el("option", {value: "", text: label + ": all"})]);
    for (const option of options) node.appendChild(el("option", {value: option.value, text: option.text}));
    return node;
  }
  function buildFilters() {
    const box = clear(document.getElementById("filters"));
    if (boot.runs.length > 1) {
      box.appendChild(select("run", "run", boot.runs.map((run, i) => ({value: String(i), text: run.label}))));
    }
    for (const key of ["env", "family", "difficulty", "split"]) {
      box.appendChild(select(key, key, distinct(key).map((value) => ({value: value, text: value || "(none)"}))));
    }
    box.appendChild(select("success", "success", [{value: "true", text: "succeeded"},
      {value: "false", text: "failed"}]));
    box.appendChild(select("diagnosis", "diagnosis", distinct("diagnosis").map((value) => ({value: value, text: value || "(none)"}))));
    box.appendChild(el("input", {id: "filter-text", type: "search", placeholder: "task id or diagnosis",
      "aria-label": "search", on: {input: (event) => { filters.text = event.target.value.toLowerCase(); page = 0; apply(); }}}));
  }
  function apply() {
    shown = all.filter((row) =>
      (filters.run === "" || String(row.run) === filters.run) &&
      (filters.env === "" || row.env === filters.env) &&
      (filters.family === "" || row.family === filters.family) &&
      (filters.difficulty === "" || row.difficulty === filters.difficulty) &&
      (filters.split === "" || row.split === filters.split) &&
      (filters.success === "" || String(row.success) === filters.success) &&
      (filters.diagnosis === "" || row.diagnosis === filters.diagnosis) &&
      (filters.text === "" || row.task.toLowerCase().includes(filters.text) ||
        row.diagnosis.toLowerCase().includes(filters.text)));
    renderTable();
  }
  const SHOWN = ["run", "env", "task", "family", "difficulty", "split", "sample", "success", "reward", "turns",
    "tool_errors", "diagnosis"];
  function renderTable() {
    const table = document.getElementById("episodes");
    const head = clear(table.tHead);
    head.appendChild(el("tr", null, SHOWN.filter((key) => key !== "run" || boot.runs.length > 1)
      .map((key) => el("th", {text: key.replace("_", " ")}))));
    const body = clear(table.tBodies[0]);
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    page = Math.min(page, pages - 1);
    for (const row of shown.slice(page * PAGE, (page + 1) * PAGE)) {
      const cells = SHOWN.filter((key) => key !== "run" || boot.runs.length > 1).map((key) => {
        let value = row[key];
        if (key === "run") value = boot.runs[row.run].label;
        if (key === "success") value = row.success ? "yes" : "no";
        return el("td", {text: fmt(value), cls: key === "success" ? (row.success ? "ok" : "bad") : ""});
      });
      body.appendChild(el("tr", {cls: "episode-row", tabindex: "0",
        on: {click: () => openEpisode(row.run, row.index), keydown: (event) => {
          if (event.key === "Enter") openEpisode(row.run, row.index); }}}, cells));
    }
    document.getElementById("count").textContent = shown.length + " of " + all.length + " episodes";
    const pager = clear(document.getElementById("pager"));
    pager.appendChild(el("button", {text: "previous", on: {click: () => { if (page > 0) { page--; renderTable(); } }}}));
    pager.appendChild(el("span", {text: " page " + (page + 1) + " of " + pages + " "}));
    pager.appendChild(el("button", {text: "next", on: {click: () => { if (page < pages - 1) { page++; renderTable(); } }}}));
  }

  // ---- one episode -------------------------------------------------------------------------------------
  function parseJson(text) {
    if (typeof text !== "string") return text;
    const trimmed = text.trim();
    if (!(trimmed.startsWith("{") || trimmed.startsWith("["))) return undefined;
    try { return JSON.parse(trimmed); } catch (error) { return undefined; }
  }
  function markdownTable(text) {
    const lines = text.split("\n");
    const start = lines.findIndex((line) => line.trim().startsWith("|"));
    if (start < 0 || start + 1 >= lines.length || !/^\s*\|[\s\-:|]+\|\s*$/.test(lines[start + 1])) return null;
    const cells = (line) => line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
    let end = start + 2;
    while (end < lines.length && lines[end].trim().startsWith("|")) end++;
    const table = el("table", {cls: "result"}, [el("thead", null, [el("tr", null, cells(lines[start]).map((c) => el("th", {text: c})))]),
      el("tbody", null, lines.slice(start + 2, end).map((line) => el("tr", null, cells(line).map((c) => el("td", {text: c})))))]);
    const before = lines.slice(0, start).join("\n").trim();
    const after = lines.slice(end).join("\n").trim();
    return el("div", null, [before ? el("pre", {text: before}) : null, table, after ? el("pre", {cls: "note", text: after}) : null]);
  }
  function objectsTable(value) {
    if (!Array.isArray(value) || value.length === 0 || value.length > 500) return null;
    if (!value.every((item) => item && typeof item === "object" && !Array.isArray(item))) return null;
    const keys = Array.from(new Set(value.flatMap((item) => Object.keys(item))));
    if (keys.length > 30 || value.some((item) => Object.values(item).some((v) => v && typeof v === "object"))) return null;
    return el("table", {cls: "result"}, [el("thead", null, [el("tr", null, keys.map((k) => el("th", {text: k})))]),
      el("tbody", null, value.map((item) => el("tr", null, keys.map((k) => el("td", {text: fmt(item[k])})))))]);
  }
  function content(text) {
    if (text === null || text === undefined || text === "") return null;
    const parsed = parseJson(text);
    if (parsed !== undefined) return objectsTable(parsed) || el("pre", {cls: "json", text: JSON.stringify(parsed, null, 2)});
    const table = typeof text === "string" ? markdownTable(text) : null;
    return table || el("pre", {text: typeof text === "string" ? text : JSON.stringify(text, null, 2)});
  }
  function message(msg, turn) {
    const role = String(msg.role || "?");
    const parts = [el("div", {cls: "role"}, [el("span", {text: role + (msg.name ? " · " + msg.name : "") +
      (msg.tool_call_id ? " (" + msg.tool_call_id + ")" : "")}),
      turn ? el("span", {cls: "turn-label", title: "diagnosis of this turn", text: "turn " + turn.number + ": " + turn.label}) : null])];
    parts.push(content(msg.content));
    for (const call of msg.tool_calls || []) {
      const fn = call.function || {};
      const args = parseJson(fn.arguments);
      parts.push(el("div", {cls: "call"}, [el("span", {cls: "tool", text: "→ " + String(fn.name || "?") +
        (call.id ? " (" + call.id + ")" : "")}),
        el("pre", {cls: "json", text: args !== undefined ? JSON.stringify(args, null, 2) : String(fn.arguments || "")})]));
    }
    return el("div", {cls: "msg " + role.replace(/[^a-z]/g, "")}, parts);
  }
  function explain(term) {
    if (boot.terms[term]) return boot.terms[term];
    for (const prefix of Object.keys(boot.prefixes)) if (term.startsWith(prefix)) return boot.prefixes[prefix];
    return "reported by the env (no description known to the viewer)";
  }
  function episodeView(payload, runIndex) {
    const record = payload.record;
    const row = payload.row;
    const head = el("div", {cls: "ep-head"}, [
      el("h2", {text: (boot.runs.length > 1 ? boot.runs[runIndex].label + ": " : "") + row.task + " #" + row.sample}),
      el("p", {text: [row.env, row.family, row.difficulty, row.split].filter(Boolean).join(" · ") +
        " — " + (row.success ? "success" : "failure") + ", reward " + fmt(row.reward) + ", " + row.turns +
        " turns, " + row.tool_calls + " tool calls (" + row.tool_errors + " errors)" +
        (record.truncated ? ", cut at the turn limit" : "") + (record.error ? ", agent error: " + record.error : "")}),
      row.diagnosis ? el("p", {cls: "diagnosis", text: "diagnosis: " + row.diagnosis}) : null]);
    const breakdown = record.reward_breakdown && typeof record.reward_breakdown === "object" ? record.reward_breakdown : {};
    const terms = el("table", {cls: "breakdown"}, [el("thead", null, [el("tr", null, [el("th", {text: "term"}),
      el("th", {text: "value"}), el("th", {text: "what it means"})])]),
      el("tbody", null, Object.keys(breakdown).map((term) => el("tr", null, [el("td", {text: term}),
        el("td", {text: fmt(breakdown[term])}), el("td", {text: explain(term)})])))]);
    const goldKeys = Object.keys(payload.gold || {});
    const gold = el("div", {cls: "gold"}, goldKeys.length ? goldKeys.map((key) => el("div", null, [
      el("div", {cls: "role", text: "gold " + key}), content(typeof payload.gold[key] === "string" ?
        payload.gold[key] : JSON.stringify(payload.gold[key]))])).concat(
        [el("p", {cls: "note", text: "from " + String(payload.gold_source || "?")})]) :
      [el("p", {cls: "note gold-missing", text: "gold not available: " + String(payload.gold_missing || "no task found")})]);
    const submitted = [];
    for (const msg of record.messages || []) for (const call of msg.tool_calls || []) {
      const name = String((call.function || {}).name || "");
      if (name.startsWith("submit")) submitted.push(el("pre", {cls: "json", text: name + " " + String((call.function || {}).arguments || "")}));
    }
    const side = el("div", {cls: "side"}, [el("h3", {text: "Agent's submission"}),
      submitted.length ? el("div", null, submitted) : el("p", {cls: "note", text: "The agent never submitted."}),
      el("h3", {text: "Gold"}), gold, el("h3", {text: "Reward breakdown"}), terms]);
    // turn k of the diagnosis is the k-th assistant message (one action per turn)
    const diagnosis = record.diagnosis && typeof record.diagnosis === "object" ? record.diagnosis : {};
    const turnLabels = Array.isArray(diagnosis.turns) ? diagnosis.turns : [];
    let turns = 0;
    const conversation = el("div", {cls: "conversation"}, (record.messages || []).map((msg) => {
      if (msg.role !== "assistant") return message(msg, null);
      turns++;
      return message(msg, turns <= turnLabels.length ? {number: turns, label: String(turnLabels[turns - 1])} : null);
    }));
    return el("div", {cls: "episode-view"}, [head, el("div", {cls: "ep-body"}, [conversation, side])]);
  }
  async function openEpisode(run, index) {
    const box = clear(document.getElementById("episode"));
    box.appendChild(el("p", {text: "loading…"}));
    try {
      const payload = await getEpisode(run, index);
      clear(box).appendChild(episodeView(payload, run));
      const others = all.filter((row) => row.run !== run && row.env === payload.row.env && row.task === payload.row.task
        && row.sample === payload.row.sample);
      for (const other of others) {
        box.firstChild.firstChild.appendChild(el("button", {cls: "compare-button", text: "compare with " + boot.runs[other.run].label,
          on: {click: () => { showView("compare"); compare(run, index, other.run, other.index); }}}));
      }
      box.scrollIntoView();
    } catch (error) { clear(box).appendChild(el("p", {cls: "bad", text: String(error)})); }
  }

  // ---- comparison --------------------------------------------------------------------------------------
  async function compare(runA, indexA, runB, indexB) {
    const box = clear(document.getElementById("compare"));
    const [left, right] = await Promise.all([getEpisode(runA, indexA), getEpisode(runB, indexB)]);
    box.appendChild(el("div", {cls: "pair"}, [episodeView(left, runA), episodeView(right, runB)]));
  }
  function buildCompare() {
    const box = clear(document.getElementById("compare-controls"));
    if (boot.runs.length < 2) { box.appendChild(el("p", {text: "Give two runs to `agentgym view` to compare them."})); return; }
    const pick = (id, def) => el("select", {id: id}, boot.runs.map((run, i) => { const o = el("option", {value: String(i), text: run.label}); if (i === def) o.selected = true; return o; }));
    const a = pick("compare-a", 0), b = pick("compare-b", 1);
    const tasks = el("select", {id: "compare-task"});
    function refill() {
      clear(tasks);
      const inB = new Map(all.filter((r) => String(r.run) === b.value).map((r) => [r.env + "/" + r.task + "#" + r.sample, r]));
      for (const row of all.filter((r) => String(r.run) === a.value)) {
        const key = row.env + "/" + row.task + "#" + row.sample;
        const other = inB.get(key);
        if (!other) continue;
        const mark = (row.success ? "✓" : "✗") + (other.success ? "✓" : "✗");
        tasks.appendChild(el("option", {value: row.index + ":" + other.index, text: mark + " " + key}));
      }
    }
    a.addEventListener("change", refill); b.addEventListener("change", refill); refill();
    box.appendChild(el("label", {text: "run A "})); box.appendChild(a);
    box.appendChild(el("label", {text: " run B "})); box.appendChild(b);
    box.appendChild(el("label", {text: " task "})); box.appendChild(tasks);
    box.appendChild(el("button", {id: "compare-go", text: "show side by side", on: {click: () => {
      if (!tasks.value) return;
      const [ia, ib] = tasks.value.split(":").map(Number);
      compare(Number(a.value), ia, Number(b.value), ib);
    }}}));
  }

  // ---- plots and tabs ----------------------------------------------------------------------------------
  function buildPlotTabs() {
    const box = clear(document.getElementById("plot-runs"));
    const sections = Array.from(document.querySelectorAll("section.plots"));
    const showRun = (i) => sections.forEach((section) => {
      section.hidden = section.dataset.run !== String(i);
      const frame = section.querySelector("iframe.plots-frame");
      if (!section.hidden && frame && !frame.getAttribute("src")) frame.setAttribute("src", frame.dataset.src);
    });
    if (boot.runs.length > 1) box.appendChild(el("select", {id: "plot-run", on: {change: (e) => showRun(e.target.value)}},
      boot.runs.map((run, i) => el("option", {value: String(i), text: run.label}))));
    plotsShown = () => showRun(boot.runs.length > 1 ? document.getElementById("plot-run").value : 0);
  }
  let plotsShown = () => {};
  function showView(name) {
    for (const view of ["episodes", "plots", "compare"]) document.getElementById("view-" + view).hidden = view !== name;
    for (const button of document.querySelectorAll("nav button")) button.classList.toggle("active", button.dataset.view === name);
    if (name === "plots") plotsShown();
  }
  for (const button of document.querySelectorAll("nav button")) button.addEventListener("click", () => showView(button.dataset.view));

  getRows().then((data) => {
    columns = data.columns;
    all = [];
    data.runs.forEach((rows, run) => rows.forEach((values, index) => {
      const row = {run: run, index: index};
      columns.forEach((name, i) => { row[name] = values[i]; });
      all.push(row);
    }));
    buildFilters(); apply(); buildPlotTabs(); buildCompare();
    document.body.dataset.ready = "true";
  }).catch((error) => {
    document.getElementById("count").textContent = String(error);
    document.body.dataset.ready = "error";
  });
})();
