// Drives the raglab page in Debian's Chromium with playwright-core; prints one JSON line of what it saw.
// Usage: node ui.mjs '{"url": "http://127.0.0.1:PORT/", "token": "...", "question": "...",
//                      "tableQuestion": "...", "refusedQuestion": "...", "screenshot": "/tmp/x.png"}'
// (tableQuestion and refusedQuestion are optional: the sources of the first are opened one by one until a
// chunk shows a table; the second must be refused.)
// Environment: CHROMIUM (default /usr/bin/chromium).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const opts = JSON.parse(process.argv[2]);
const TIMEOUT = opts.timeoutMs ?? 60000;
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// The element names under a node, in document order (what the page rendered, not what the text says).
const tagsOf = (el) => [...el.querySelectorAll('*')].map((e) => e.tagName.toLowerCase());

const profile = mkdtempSync(join(tmpdir(), 'raglab-chromium-'));   // a fresh user-data dir every run
const out = { console: [], pageErrors: [], requests: [] };
let context;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true, args: ARGS, viewport: { width: 1000, height: 900 }, timeout: TIMEOUT,
  });
  const page = context.pages()[0] ?? await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') out.console.push(m.text()); });
  page.on('pageerror', (e) => out.pageErrors.push(String(e)));
  page.on('request', (r) => out.requests.push(r.url()));

  await page.goto(opts.url, { waitUntil: 'load' });
  out.title = await page.title();
  await page.fill('#token', opts.token);
  await page.fill('#question', opts.question);
  await page.click('#ask');
  await page.waitForSelector('#answer a.cite[data-id]');
  out.answer = await page.textContent('#answer');
  out.answerClass = await page.getAttribute('#answer', 'class');
  out.markers = await page.$$eval('#answer a.cite[data-id]', (as) => as.map((a) => ({ n: a.dataset.n, id: a.dataset.id, text: a.textContent })));
  out.answerFormat = await page.getAttribute('#answer', 'data-format');
  out.answerTags = await page.$eval('#answer', tagsOf);
  await page.click('#answer a.cite[data-id] >> nth=0');
  await page.waitForSelector('#chunk:not([hidden])');
  await page.waitForFunction(() => document.getElementById('chunk-text').textContent.trim().length > 0);
  out.chunkId = await page.getAttribute('#chunk', 'data-id');
  out.chunkTitle = await page.textContent('#chunk-title');
  out.chunkText = await page.textContent('#chunk-text');
  out.chunkFormat = await page.getAttribute('#chunk-text', 'data-format');
  out.chunkTags = await page.$eval('#chunk-text', tagsOf);
  await page.screenshot({ path: opts.screenshot, fullPage: true });

  if (opts.tableQuestion) {               // open the sources one by one until a chunk shows a table
    await page.fill('#question', opts.tableQuestion);
    await page.$eval('#sources', (el) => el.replaceChildren());
    await page.click('#ask');
    await page.waitForSelector('#sources a.cite[data-id]');
    const ids = await page.$$eval('#sources a.cite[data-id]', (as) => as.map((a) => a.dataset.id));
    for (let i = 0; i < ids.length && !out.table; i++) {
      await page.$eval('#chunk', (el) => { el.dataset.id = ''; });
      await page.click(`#sources a.cite[data-id] >> nth=${i}`);
      await page.waitForFunction((id) => document.getElementById('chunk').dataset.id === id, ids[i]);
      out.table = await page.$eval('#chunk-text', (el) => {
        const t = el.querySelector('table');
        return t && { headers: [...t.querySelectorAll('th')].map((th) => th.textContent.trim()),
          rows: t.querySelectorAll('tbody tr').length, border: getComputedStyle(t.querySelector('th')).borderTopStyle };
      });
      if (out.table) { out.table.id = ids[i]; out.table.text = await page.textContent('#chunk-text'); }
    }
  }

  if (opts.refusedQuestion) {             // a reload keeps the token (localStorage); a refusal looks different
    await page.reload({ waitUntil: 'load' });
    out.tokenAfterReload = await page.inputValue('#token');
    await page.fill('#question', opts.refusedQuestion);
    await page.click('#ask');
    await page.waitForSelector('#answer.refused #refusal');
    out.refusal = await page.textContent('#refusal');
    out.refusalReason = await page.textContent('#answer .reason');
    out.refusalMarkers = await page.$$eval('#answer a.cite', (as) => as.length);
    out.refusalBorder = await page.$eval('#answer', (el) => getComputedStyle(el).borderTopColor);
  }
  out.ok = true;
} catch (err) {
  out.ok = false;
  out.error = String(err && err.stack || err);
} finally {
  if (context) await context.close().catch(() => {});
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify(out));
process.exit(out.ok ? 0 : 1);
