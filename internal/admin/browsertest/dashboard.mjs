// Drives the weir dashboard of a running job in Debian's headless
// Chromium: node dashboard.mjs URL SCREENSHOT.png PARTITION
// It checks that the page goes live, names the silent PARTITION as idle
// in the source's input table and shows a holder chain, that a watermark
// cell changes as the job runs, that the charts are drawn, that the
// doctor's panel shows a diagnosis, and that the console logs no error
// and the page no NaN; it saves a screenshot. Exit 0: all held.
import { chromium } from "playwright-core";

const [url, shot, silent] = process.argv.slice(2);
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

  // A watermark cell of the window operator changes while records flow.
  const cell = 'table[data-op="window"] tr.holding td.wm';
  await page.waitForSelector(cell, { timeout: 20000 });
  const before = await page.locator(cell).first().textContent();
  await page.waitForFunction(([sel, old]) => { const td = document.querySelector(sel); return td && td.textContent !== old; }, [cell, before], { timeout: 20000 });

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
  // The doctor's panel has a diagnosis and the badge a verdict.
  await page.waitForFunction(() => document.querySelector("#doctor .quadrant") !== null && document.getElementById("docbadge").dataset.worst, null, { timeout: 20000 });
  const nan = await page.evaluate(() => document.body.innerText.includes("NaN"));
  if (nan) fail("the page shows NaN");

  await page.screenshot({ path: shot, fullPage: true });
  if (errors.length) fail("console errors: " + errors.join(" | "));
  if (!process.exitCode) console.log("ok: live, " + silent + " idle, watermark moved, charts drawn, no console error; screenshot " + shot);
} catch (e) {
  fail(String(e && e.stack || e));
} finally {
  await browser.close();
}
