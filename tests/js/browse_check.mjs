// Drives Debian's Chromium through playwright-core over the folder browser (gamemesh view DIR).
// Usage: node browse_check.mjs URL FILTER -> prints one JSON object: the cards and groups shown,
// how many thumbnails loaded, what the filter left, and whether a model page links back to
// the list (and the link leads there).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--use-angle=swiftshader', '--enable-unsafe-swiftshader'];

const [url, filter] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const profile = mkdtempSync(join(tmpdir(), 'gamemesh-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath, headless: true, args: FLAGS, viewport: { width: 1000, height: 800 },
});
const out = { logs: [] };
try {
  const page = await context.newPage();
  page.on('pageerror', (e) => out.logs.push(String(e)));
  await page.goto(url);
  await page.waitForFunction(() => window.gamemeshBrowser && window.gamemeshBrowser.ready, null, { timeout: 30000 });
  const cards = () => page.evaluate(() => [...document.querySelectorAll('#groups .card .name')].map((e) => e.textContent));
  const groups = () => page.evaluate(() => [...document.querySelectorAll('#groups .group h2')].map((e) => e.textContent));
  out.cards = await cards();
  out.groups = await groups();
  await page.waitForFunction(() => [...document.querySelectorAll('#groups .card img')].every((i) => i.complete && i.naturalWidth > 0), null, { timeout: 60000 });
  out.thumbs_loaded = await page.evaluate(() => [...document.querySelectorAll('#groups .card img')].filter((i) => i.naturalWidth > 0).length);
  await page.selectOption('#group', 'format');
  out.groups_by_format = await groups();
  await page.fill('#filter', filter);
  out.filtered = await cards();
  out.shown = await page.textContent('#shown');
  await page.fill('#filter', '');
  await page.click('#groups .card');
  await page.waitForFunction(() => window.gamemeshViewer && (window.gamemeshViewer.ready || window.gamemeshViewer.error), null, { timeout: 30000 });
  out.model_url = page.url();
  out.back_visible = await page.isVisible('#back');
  await page.click('#back');
  await page.waitForFunction(() => window.gamemeshBrowser && window.gamemeshBrowser.ready, null, { timeout: 30000 });
  out.back_url = page.url();
} catch (e) {
  out.error = String(e);
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out));
