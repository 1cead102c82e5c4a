// Opens a rendered notebook (HTML from nbconvert) in Debian's Chromium with playwright-core, takes a
// screenshot and prints one JSON line of what a reader sees: stderr blocks and their line counts, empty
// output prompts, and whether a given text is visible.
// Usage: node notebook.mjs '{"file": "/tmp/x.html", "screenshot": "/tmp/x.png", "expect": "240/240"}'
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const opts = JSON.parse(process.argv[2]);
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];
const profile = mkdtempSync(join(tmpdir(), 'raglab-chromium-'));
const out = {};
let context;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, args: ARGS,
    viewport: { width: 1000, height: 900 }, timeout: 60000,
  });
  const page = context.pages()[0] ?? await context.newPage();
  await page.goto('file://' + opts.file, { waitUntil: 'load' });
  out.stderrLines = await page.$$eval('[data-mime-type="application/vnd.jupyter.stderr"]',
    (els) => els.map((e) => e.innerText.split('\n').filter((l) => l.trim()).length));
  out.emptyOutputs = await page.$$eval('.jp-OutputArea-child',
    (els) => els.filter((e) => e.querySelector('.jp-OutputArea-prompt')?.innerText.trim().startsWith('Out')
                              && !e.querySelector('.jp-OutputArea-output')?.innerText.trim()).length);
  out.expectVisible = opts.expect ? await page.getByText(opts.expect).first().isVisible() : null;
  await page.screenshot({ path: opts.screenshot, fullPage: true });
  out.ok = true;
} catch (e) {
  out.error = String(e);
} finally {
  if (context) await context.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify(out));
