// weir dashboard: one page, live over server-sent events from
// /api/v1/events (the history first, then a point and a snapshot each
// second). Every missing value is shown as a dash with its reason.
"use strict";

const $ = (id) => document.getElementById(id);
let snap = null;          // newest snapshot
let points = [];          // history, oldest first
const charts = {};        // uPlot instances by id
const MAX_POINTS = 900;

// ---- formatting -------------------------------------------------------

function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

// dur formats seconds as "850 ms", "12 s", "3m12s", "2h05m".
function dur(s) {
  const a = Math.abs(s);
  if (a < 1) return Math.round(a * 1000) + " ms";
  if (a < 60) return (a < 10 ? a.toFixed(1) : Math.round(a)) + " s";
  if (a < 3600) return Math.floor(a / 60) + "m" + String(Math.floor(a % 60)).padStart(2, "0") + "s";
  if (a < 86400 * 3) return Math.floor(a / 3600) + "h" + String(Math.floor((a % 3600) / 60)).padStart(2, "0") + "m";
  return Math.round(a / 86400) + " days";
}

const MAX_TIME = 9223372036854775807;

// wmAbs renders a watermark (Unix ms) as UTC; the end of input as "end".
function wmAbs(ms) {
  if (ms >= MAX_TIME - 1000) return "end of input";
  return new Date(ms).toISOString().replace("T", " ").replace(".000Z", "Z");
}

// wmRel renders a watermark relative to processing time now (ms).
function wmRel(ms, now) {
  if (ms >= MAX_TIME - 1000) return "end of input";
  const d = (now - ms) / 1000;
  return d >= 0 ? "−" + dur(d) : "+" + dur(-d) + " (ahead of the clock)";
}

// lagText renders a lag in seconds with its sign: negative when the
// watermark is ahead of the clock (future-dated records).
function lagText(s) {
  return s < 0 ? "−" + dur(-s) : dur(s);
}

function none(why) {
  return '<span class="state-none">—</span> <span class="why">' + esc(why || "unknown") + "</span>";
}

function num(n) { return Number(n).toLocaleString("en-US"); }

function bytes(n) {
  if (n < 1024) return n + " B";
  if (n < 1 << 20) return (n / 1024).toFixed(1) + " KiB";
  if (n < 1 << 30) return (n / (1 << 20)).toFixed(1) + " MiB";
  return (n / (1 << 30)).toFixed(2) + " GiB";
}

// ---- header strip -----------------------------------------------------

function renderStrip(s) {
  $("job").textContent = s.job.name || "(unnamed)";
  let lowest = null, why = "";
  for (const op of s.operators) {
    if (op.source) continue;
    if (op.watermark === null) { why = op.name + ": " + (op.watermark_why || "no watermark yet"); lowest = null; break; }
    if (lowest === null || op.watermark < lowest) lowest = op.watermark;
  }
  if (lowest === null) {
    $("evtime").innerHTML = none(why || "no operator has a watermark yet");
    $("lag").innerHTML = none("no watermark yet");
  } else {
    $("evtime").textContent = wmAbs(lowest);
    const lag = (s.now - lowest) / 1000;
    if (lowest >= MAX_TIME - 1000) $("lag").textContent = "0 (input ended)";
    else if (lag < 0) $("lag").innerHTML = esc(lagText(lag)) + ' <span class="why">watermark ahead of the clock</span>';
    else $("lag").textContent = lagText(lag);
  }
  const t = s.totals;
  $("recin").textContent = num(t.records_in);
  const late = t.side_output + t.dropped;
  $("lateshare").textContent = t.records_in > 0 ? num(late) + " (" + (100 * late / t.records_in).toFixed(2) + "%)" : "0";
  $("ckage").innerHTML = t.last_checkpoint_age_s === null ? none(t.checkpoints === 0 ? "no checkpoint yet (or checkpoints are off)" : "unknown") : dur(t.last_checkpoint_age_s) + " ago (" + num(t.checkpoints) + " in all)";
}

// ---- job graph --------------------------------------------------------

// LAG_GRACE_S is the lag a healthy job has beyond its bound and
// watermark interval: records' way from their producer to the source and
// the watermark's through the exchanges.
const LAG_GRACE_S = 1;

// lagClass judges an operator's lag. A healthy job's lag is the bound
// plus up to the watermark interval (a periodic watermark is bound
// behind the newest record when emitted and ages until the next), plus
// delivery: green within that, amber within a window more, red beyond.
function lagClass(op, s) {
  if (op.lag_s === null) return "none";
  const b = s.job.bound_ms / 1000, w = s.job.window_ms / 1000, iv = (s.job.watermark_interval_ms || 0) / 1000;
  const ok = b + iv + LAG_GRACE_S;
  // A watermark far ahead of the clock (future-dated records, the
  // doctor's D8) is as bad as one far behind.
  if (op.lag_s < -Math.max(300, b)) return "bad";
  if (op.lag_s <= ok) return "ok";
  if (op.lag_s <= ok + w) return "warn";
  return "bad";
}

function renderGraph(s) {
  const svg = $("graph");
  const W = 190, H = 84, gap = 70, y = 30;
  let html = '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#5b6475"/></marker></defs>';
  const x = {};
  s.operators.forEach((op, i) => { x[op.name] = 10 + i * (W + gap); });
  const last = points.length ? points[points.length - 1].ops : {};
  for (const op of s.operators) {
    for (const up of op.upstream || []) {
      if (x[up] === undefined) continue;
      html += '<path class="edge" d="M' + (x[up] + W) + "," + (y + H / 2) + " L" + x[op.name] + "," + (y + H / 2) + '"/>';
    }
  }
  for (const op of s.operators) {
    const p = last[op.name] || {};
    const wm = op.watermark === null ? "no watermark" : wmRel(op.watermark, s.now);
    const busy = p.busy === null || p.busy === undefined ? null : p.busy;
    const bp = p.backpressured === null || p.backpressured === undefined ? null : p.backpressured;
    const x0 = x[op.name];
    html += '<g class="node ' + lagClass(op, s) + '" data-op="' + esc(op.name) + '">';
    html += '<rect x="' + x0 + '" y="' + y + '" width="' + W + '" height="' + H + '" rx="6"/>';
    html += '<text x="' + (x0 + 8) + '" y="' + (y + 18) + '" font-weight="600">' + esc(op.name) + " ×" + op.parallelism + "</text>";
    html += '<text x="' + (x0 + 8) + '" y="' + (y + 36) + '">watermark ' + esc(wm) + "</text>";
    const bw = W - 16;
    html += '<rect class="bar-bg" x="' + (x0 + 8) + '" y="' + (y + 48) + '" width="' + bw + '" height="8"/>';
    if (busy !== null) html += '<rect class="bar-busy" x="' + (x0 + 8) + '" y="' + (y + 48) + '" width="' + (bw * busy) + '" height="8"/>';
    if (bp !== null) html += '<rect class="bar-bp" x="' + (x0 + 8 + bw * (busy || 0)) + '" y="' + (y + 48) + '" width="' + (bw * bp) + '" height="8"/>';
    const label = busy === null ? "busy: measuring" : "busy " + Math.round(busy * 100) + "% · backpressured " + Math.round((bp || 0) * 100) + "%";
    html += '<text x="' + (x0 + 8) + '" y="' + (y + 74) + '">' + esc(label) + "</text>";
    html += "</g>";
  }
  svg.setAttribute("viewBox", "0 0 " + Math.max(400, s.operators.length * (W + gap)) + " 150");
  svg.innerHTML = html;
}

// ---- who holds the watermark -------------------------------------------

function stateCell(st, why) {
  const cls = st === "active" ? "state-active" : st === "idle" ? "state-idle" : st === "paused" ? "state-paused" : "state-none";
  return '<span class="' + cls + '">' + esc(st) + "</span>" + (why ? ' <span class="why">' + esc(why) + "</span>" : "");
}

function renderHolders(s) {
  let chains = "";
  for (const h of s.holders || []) {
    if (h.ended) {
      // The final watermark passed: nothing holds it, no time counts on.
      chains += '<div class="chain ended" data-holder="' + esc(h.operator) + '">' + esc(h.operator) + ": " + esc(h.reason || "the input ended") +
        (s.ended_at !== null && s.ended_at !== undefined ? " (since " + esc(wmAbs(s.ended_at)) + ")" : "") + "</div>";
      continue;
    }
    const steps = (h.chain || []).join(" ← ");
    chains += '<div class="chain" data-holder="' + esc(h.operator) + '">' + esc(h.operator) + " is held by " + esc(steps || "nothing") +
      (h.reason ? " — " + esc(h.reason) : "") + (h.holding_for_s > 0 ? " — holding for " + dur(h.holding_for_s) : "") + "</div>";
  }
  $("chains").innerHTML = chains || '<p class="hint">No operator with inputs has a holder yet.</p>';
  let out = "";
  for (const op of s.operators) {
    const rows = [];
    for (const st of op.subtasks) {
      for (const inp of st.inputs || []) rows.push({ st, inp });
      if (!st.inputs || st.inputs.length === 0) rows.push({ st, inp: null });
    }
    rows.sort((a, b) => {
      const wa = a.inp && a.inp.watermark !== null ? a.inp.watermark : -Infinity;
      const wb = b.inp && b.inp.watermark !== null ? b.inp.watermark : -Infinity;
      return wa - wb;
    });
    out += "<h3>" + esc(op.name) + (op.source ? " (source)" : "") + "</h3>";
    out += '<table data-op="' + esc(op.name) + '"><thead><tr><th>subtask</th><th>input</th><th>watermark</th><th>relative</th><th>state</th><th>backlog</th><th>last record</th><th></th></tr></thead><tbody>';
    for (const { st, inp } of rows) {
      if (!inp) {
        out += "<tr><td>" + st.index + "</td><td>" + none("this subtask reports no inputs") + "</td><td>" +
          (st.watermark === null ? none(st.why) : esc(wmAbs(st.watermark))) + "</td><td>" + (st.watermark === null ? "" : esc(wmRel(st.watermark, s.now))) +
          "</td><td>" + stateCell(st.state, st.why) + "</td><td></td><td></td><td></td></tr>";
        continue;
      }
      out += '<tr class="' + (inp.holding ? "holding" : "") + '" data-input="' + esc(inp.name) + '">';
      out += "<td>" + st.index + "</td><td>" + esc(inp.name) + "</td>";
      out += '<td class="wm">' + (inp.watermark === null ? none(inp.why || "no watermark yet") : esc(wmAbs(inp.watermark))) + "</td>";
      out += "<td>" + (inp.watermark === null ? "" : esc(wmRel(inp.watermark, s.now))) + "</td>";
      out += '<td class="state">' + stateCell(inp.state, inp.why) + "</td>";
      out += "<td>" + (inp.backlog === null || inp.backlog === undefined ? (op.source ? none("not reported") : "") : num(inp.backlog)) + "</td>";
      out += "<td>" + (inp.last_record_age_s === null || inp.last_record_age_s === undefined ? (op.source ? none("none yet") : "") : dur(inp.last_record_age_s) + " ago") + "</td>";
      out += "<td>" + (inp.holding ? "holds the watermark" : "") + "</td></tr>";
    }
    out += "</tbody></table>";
  }
  $("holders").innerHTML = out;
}

// ---- late data ---------------------------------------------------------

function renderLate(s) {
  const t = s.totals;
  let html = "<table><thead><tr><th>on time</th><th>late, accepted (allowed lateness)</th><th>too late: side output</th><th>too late: dropped</th><th>dead letters</th></tr></thead><tbody><tr>" +
    "<td>" + num(t.on_time) + "</td><td>" + num(t.late_accepted) + "</td><td>" + num(t.side_output) + "</td><td>" + num(t.dropped) + "</td><td>" + num(t.dead_letters) + "</td></tr></tbody></table>";
  const recent = s.recent_late || [];
  if (recent.length === 0) {
    html += '<p class="hint">No record has been too late yet.</p>';
  } else {
    html += "<table><thead><tr><th>id</th><th>key</th><th>event time</th><th>watermark at arrival</th><th>late by</th><th>missed windows</th><th>why</th></tr></thead><tbody>";
    for (const l of recent.slice().reverse()) {
      html += "<tr><td>" + esc(l.id) + "</td><td>" + esc(l.key) + "</td><td>" + esc(wmAbs(l.ts)) + "</td><td>" + esc(wmAbs(l.watermark)) +
        "</td><td>" + dur(l.lateness_ms / 1000) + "</td><td>" + esc(l.windows) + "</td><td>" + esc(l.why) + "</td></tr>";
    }
    html += "</tbody></table>";
  }
  $("late").innerHTML = html;
}

// ---- charts -------------------------------------------------------------

const palette = ["#2c5ea8", "#b3261e", "#1b7f3b", "#a86400", "#6b3fa0", "#00838f", "#5b6475"];

// chartDefs returns, for the current operators, each chart's series:
// label and a function from a point to a value (null: a gap).
function chartDefs(s) {
  const ops = s.operators.filter((o) => !o.source).map((o) => o.name);
  const all = s.operators.map((o) => o.name);
  const wins = s.operators.filter((o) => o.window).map((o) => o.name);
  const maxOver = (p, names, f) => {
    let v = null;
    for (const n of names) { const x = p.ops[n] ? f(p.ops[n]) : null; if (x !== null && x !== undefined) v = v === null ? x : Math.max(v, x); }
    return v;
  };
  const sumOver = (p, names, f) => {
    let v = null;
    for (const n of names) { const x = p.ops[n] ? f(p.ops[n]) : null; if (x !== null && x !== undefined) v = (v || 0) + x; }
    return v;
  };
  const L = s.job.lateness_ms / 1000;
  return [
    { id: "lag", title: "Watermark lag (s)", series: ops.map((n) => ({ label: n, f: (p) => p.ops[n] ? p.ops[n].lag_s : null })) },
    { id: "spread", title: "Subtask watermark spread (s)", series: ops.map((n) => ({ label: n, f: (p) => p.ops[n] ? p.ops[n].spread_s : null })) },
    { id: "late", title: "Late records per second, by outcome", series: [
      { label: "accepted (allowed lateness)", f: (p) => sumOver(p, wins, (o) => o.late_accepted_per_s) },
      { label: "side output", f: (p) => sumOver(p, wins, (o) => o.side_output_per_s) },
      { label: "dropped", f: (p) => sumOver(p, wins, (o) => o.dropped_per_s) }] },
    { id: "lateness", title: "Lateness p50 / p99 against the allowed lateness (s)", series: [
      { label: "p50", f: (p) => maxOver(p, wins, (o) => o.lateness_p50_s) },
      { label: "p99", f: (p) => maxOver(p, wins, (o) => o.lateness_p99_s) },
      { label: "allowed lateness", f: () => L }] },
    { id: "delay", title: "Firing delay p50 / p99 (s)", series: [
      { label: "p50", f: (p) => maxOver(p, wins, (o) => o.firing_delay_p50_s) },
      { label: "p99", f: (p) => maxOver(p, wins, (o) => o.firing_delay_p99_s) }] },
    { id: "state", title: "Window state (bytes)", values: (u, vals) => vals.map(bytes), series: wins.map((n) => ({ label: n, f: (p) => p.ops[n] ? p.ops[n].state_bytes : null })) },
    { id: "busy", title: "Busy and backpressured (busiest subtask, fraction)", series: all.flatMap((n) => [
      { label: n + " busy", f: (p) => p.ops[n] ? p.ops[n].busy : null },
      { label: n + " backpressured", f: (p) => p.ops[n] ? p.ops[n].backpressured : null }]) },
    { id: "records", title: "Records in per second", series: [{ label: "records/s", f: (p) => p.job.records_in_per_s }] },
    { id: "checkpoints", title: "Checkpoints completed", series: [{ label: "checkpoints", f: (p) => p.job.checkpoints }] },
  ];
}

// yAxisSize is the y axis' width: its widest tick label as drawn (in
// the axis' font) plus the ticks, the gap and a little padding, so no
// label is clipped however wide the values grow (it was a fixed 60 px),
// and at least Y_AXIS_MIN, for the x axis' first label (a date), which
// overhangs the plot's left edge by about that much. uPlot calls it
// again as the labels change; after two cycles it keeps the size it has,
// so the layout converges.
const AXIS_PAD = 6, Y_AXIS_MIN = 60;
function yAxisSize(u, values, axisIdx, cycleNum) {
  const axis = u.axes[axisIdx];
  if (cycleNum > 1) return axis._size;
  let widest = 0;
  if (values && values.length) {
    u.ctx.save();
    u.ctx.font = axis.font[0];
    for (const v of values) widest = Math.max(widest, u.ctx.measureText(String(v)).width);
    u.ctx.restore();
  }
  return Math.max(Y_AXIS_MIN, Math.ceil(axis.ticks.size + axis.gap + widest / (window.devicePixelRatio || 1) + AXIS_PAD));
}

function chartData(def) {
  const xs = points.map((p) => p.t / 1000);
  return [xs, ...def.series.map((se) => points.map((p) => { const v = se.f(p); return v === undefined || (typeof v === "number" && !isFinite(v)) ? null : v; }))];
}

function renderCharts(s) {
  const defs = chartDefs(s);
  const box = $("charts");
  for (const def of defs) {
    const key = def.id + ":" + def.series.map((x) => x.label).join("|");
    let c = charts[def.id];
    if (!c || c.key !== key) {
      if (c) { c.plot.destroy(); c.el.remove(); }
      const el = document.createElement("div");
      el.className = "chart";
      el.dataset.chart = def.id;
      el.innerHTML = "<h3>" + esc(def.title) + '</h3><div class="empty"></div>';
      box.appendChild(el);
      const opts = {
        width: Math.max(380, el.clientWidth || 420), height: 180,
        scales: { x: { time: true } },
        series: [{}, ...def.series.map((se, i) => ({ label: se.label, stroke: palette[i % palette.length], width: 1.5, spanGaps: false }))],
        axes: [{}, def.values ? { size: yAxisSize, values: def.values } : { size: yAxisSize }],
      };
      charts[def.id] = c = { key, el, plot: new uPlot(opts, chartData(def), el) };
    } else {
      c.plot.setData(chartData(def));
    }
    const data = chartData(def);
    const has = data.slice(1).some((arr) => arr.some((v) => v !== null));
    c.el.querySelector(".empty").textContent = has ? "" : "no value yet: " + emptyWhy(def, s);
  }
}

function emptyWhy(def, s) {
  if (points.length < 2) return "rates need two samples, one second apart";
  if (def.id === "lag" || def.id === "spread") {
    const op = s.operators.find((o) => !o.source && o.watermark === null);
    return op ? op.name + ": " + (op.watermark_why || "no watermark yet") : "no watermark yet";
  }
  if (def.id === "state" || def.id === "late" || def.id === "lateness" || def.id === "delay") return "no window operator data yet";
  return "nothing measured yet";
}

// ---- doctor ------------------------------------------------------------

function renderDoctor(r) {
  const worst = r.findings && r.findings.length ? (r.findings.some((f) => f.severity === "critical") ? "critical" : r.findings.some((f) => f.severity === "warning") ? "warning" : "ok") : "ok";
  const n = (r.findings || []).filter((f) => f.severity !== "info").length;
  const badge = $("docbadge");
  badge.dataset.worst = worst;
  badge.textContent = n === 0 ? "healthy" : n + (n === 1 ? " finding" : " findings");
  let html = '<p class="quadrant"><b>' + esc(r.quadrant) + "</b> — " + esc(r.quadrant_why) + "</p>";
  if (!r.findings || r.findings.length === 0) html += '<p class="hint">No findings.</p>';
  for (const f of r.findings || []) {
    html += '<div class="finding ' + esc(f.severity) + '" data-rule="' + esc(f.rule) + '"><b>' + esc(f.rule) + " " + esc(f.severity) + "</b> " + esc(f.where) + ": " + esc(f.title) +
      '<div class="ev">evidence: ' + esc(f.evidence) + '</div><div class="fix">fix: ' + esc(f.fix) + "</div></div>";
  }
  $("doctor").innerHTML = html;
}

async function pollDoctor() {
  try {
    const resp = await fetch("api/v1/doctor");
    if (resp.ok) renderDoctor(await resp.json());
  } catch (e) {
    // The job ended or the network failed: the status says so.
  }
}

// ---- wiring ------------------------------------------------------------

function render() {
  if (!snap) return;
  renderStrip(snap);
  renderGraph(snap);
  renderHolders(snap);
  renderLate(snap);
  renderCharts(snap);
}

function setStatus(state, text) {
  const el = $("status");
  el.dataset.state = state;
  el.textContent = text;
}

function connect() {
  const es = new EventSource("api/v1/events");
  es.addEventListener("history", (e) => { points = JSON.parse(e.data) || []; });
  es.addEventListener("snapshot", (e) => {
    const s = JSON.parse(e.data);
    if (s) {
      const first = snap === null;
      snap = s;
      if (s.ended_at !== null && s.ended_at !== undefined) setStatus("finished", "input ended (final state)");
      else setStatus("live", "live");
      render();
      if (first) pollDoctor();
    }
  });
  es.addEventListener("point", (e) => {
    points.push(JSON.parse(e.data));
    if (points.length > MAX_POINTS) points.shift();
  });
  es.onerror = () => {
    // The job ended (its server is gone) or the network failed:
    // EventSource retries by itself.
    setStatus(snap ? "ended" : "lost", snap ? "ended or unreachable (retrying)" : "unreachable (retrying)");
  };
}

connect();
setInterval(pollDoctor, 5000);
