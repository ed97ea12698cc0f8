// Drives the weir dashboard of a running job in Debian's headless
// Chromium: node dashboard.mjs URL SCREENSHOT.png PARTITION CONTROL
// It checks that the page goes live, names the silent PARTITION as idle
// in the source's input table and shows a holder chain, that the job
// graph is green while the job's records come on time (its lag a little
// over the bound), that a watermark cell changes as the job runs; then
// it asks the test (GET CONTROL/ahead) to date the records ahead of the
// clock and checks that the lag card shows the negative lag, signed, and
// the graph stays green; that the charts are drawn with every y-axis
// label inside its axis, that the doctor's panel shows a diagnosis, and
// that the console logs no error and the page no NaN; it saves a
// screenshot. Exit 0: all held.
import { chromium } from "playwright-core";

const [url, shot, silent, control] = process.argv.slice(2);
const fail = (msg) => { console.error("FAIL: " + msg); process.exitCode = 1; };

const browser = await chromium.launch({
  executablePath: process.env.WEIR_CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1800 } });
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(url);

  // Live: the status says so once the first snapshot arrived.
  await page.waitForFunction(() => document.getElementById("status").dataset.state === "live", null, { timeout: 20000 });

  // The silent partition is named, and idle, in the source's table.
  const row = `table[data-op="source"] tr[data-input="${silent}"] td.state`;
  await page.waitForFunction((sel) => { const td = document.querySelector(sel); return td && td.textContent.startsWith("idle"); }, row, { timeout: 20000 });
  const chain = await page.locator("#chains .chain").first().textContent();
  if (!/is held by .*source\[\d\] partition \d/.test(chain)) fail("holder chain: " + chain);

  // Healthy: records come on time, so the lag is the bound plus up to
  // the watermark interval and a little delivery. Every operator stays
  // green over a few samples (the colour is judged against bound +
  // interval, not the bound alone, which a healthy lag always exceeds).
  await page.waitForFunction(() => {
    const gs = document.querySelectorAll("#graph g.node");
    return gs.length >= 2 && [...gs].every((g) => !g.classList.contains("none"));
  }, null, { timeout: 20000 });
  const colours = async () => page.evaluate(() => [...document.querySelectorAll("#graph g.node")].map((g) =>
    g.dataset.op + " " + g.getAttribute("class").replace("node ", "") + " lag " + (snap.operators.find((o) => o.name === g.dataset.op) || {}).lag_s));
  for (let i = 0; i < 6; i++) {
    const cs = await colours();
    if (cs.some((c) => !/ ok lag /.test(c))) { fail("a healthy job is not green: " + cs.join("; ") + "; bound " + await page.evaluate(() => snap.job.bound_ms) + " ms"); break; }
    await page.waitForTimeout(500);
  }

  // A watermark cell of the window operator changes while records flow.
  const cell = 'table[data-op="window"] tr.holding td.wm';
  await page.waitForSelector(cell, { timeout: 20000 });
  const before = await page.locator(cell).first().textContent();
  await page.waitForFunction(([sel, old]) => { const td = document.querySelector(sel); return td && td.textContent !== old; }, [cell, before], { timeout: 20000 });

  // Records dated ahead of the clock: the watermark passes it, and the
  // lag card says so with a minus sign; the graph stays green.
  const resp = await fetch(control + "/ahead");
  if (!resp.ok) fail("control: " + resp.status);
  await page.waitForFunction(() => /^[−-]\d/.test(document.getElementById("lag").textContent), null, { timeout: 20000 })
    .catch(() => null);
  const lagCard = await page.locator("#lag").textContent();
  if (!/^[−-]\d/.test(lagCard)) fail("a watermark ahead of the clock: the lag card shows " + JSON.stringify(lagCard) + ", want a negative lag");
  else if (!lagCard.includes("ahead of the clock")) fail("the lag card does not say the watermark is ahead of the clock: " + lagCard);
  const csAhead = await colours();
  if (csAhead.some((c) => !/ ok lag -/.test(c))) fail("ahead of the clock, not green with a negative lag: " + csAhead.join("; "));

  // The charts: every chart has a canvas, and the lag chart has drawn a
  // line (some pixel is not blank) once two points exist.
  await page.waitForFunction(() => document.querySelectorAll("#charts .chart canvas").length >= 9, null, { timeout: 20000 });
  await page.waitForFunction(() => {
    const c = document.querySelector('#charts .chart[data-chart="lag"] canvas');
    if (!c || c.width === 0) return false;
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) return true;
    return false;
  }, null, { timeout: 20000 });
  // Every y-axis label fits its axis: measured in the axis' font, the
  // widest tick label and the ticks are within the axis' width.
  const clipped = await page.evaluate(() => {
    const out = [];
    for (const [id, c] of Object.entries(charts)) {
      const u = c.plot, ax = u.axes[1];
      const labels = ax._values || [];
      u.ctx.save();
      u.ctx.font = ax.font[0];
      const widest = Math.max(0, ...labels.map((v) => u.ctx.measureText(String(v)).width)) / (window.devicePixelRatio || 1);
      u.ctx.restore();
      if (widest + ax.ticks.size + ax.gap > ax._size) out.push(id + ": " + JSON.stringify(labels) + " need " + Math.ceil(widest + ax.ticks.size + ax.gap) + " px, axis " + ax._size);
    }
    return out;
  });
  if (clipped.length) fail("y-axis labels clipped: " + clipped.join("; "));
  // The doctor's panel has a diagnosis and the badge a verdict.
  await page.waitForFunction(() => document.querySelector("#doctor .quadrant") !== null && document.getElementById("docbadge").dataset.worst, null, { timeout: 20000 });
  const nan = await page.evaluate(() => document.body.innerText.includes("NaN"));
  if (nan) fail("the page shows NaN");

  await page.screenshot({ path: shot, fullPage: true });
  if (errors.length) fail("console errors: " + errors.join(" | "));
  if (!process.exitCode) console.log("ok: live, " + silent + " idle, green while healthy, watermark moved, negative lag " + JSON.stringify(lagCard) +
    " signed, charts drawn with their labels, no console error; screenshot " + shot);
} catch (e) {
  fail(String(e && e.stack || e));
} finally {
  await browser.close();
}
