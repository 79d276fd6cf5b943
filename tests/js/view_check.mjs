// Drives Debian's Chromium through playwright-core over a list of viewer pages.
// Usage: node view_check.mjs JOBS.json  -> prints one JSON result per job (a JSON array).
// A job: {url, screenshot, clip, time, play_ms, page_screenshot, show_skeleton, viewport}. For each page: wait until the viewer reports
// ready, read the counts it measured on the loaded glTF, play a clip for play_ms and record
// whether time advanced and the bones moved, then pause, seek to `time` and screenshot the
// canvas. One browser serves all jobs (a launch costs more than a page).
import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--use-angle=swiftshader', '--enable-unsafe-swiftshader'];

const jobs = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const profile = mkdtempSync(join(tmpdir(), 'gamemesh-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath, headless: true, args: FLAGS,
  viewport: { width: 960, height: 600 }, deviceScaleFactor: 1,
});
const results = [];
try {
  for (const job of jobs) results.push(await runJob(job));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(results));

async function runJob(job) {
  const page = await context.newPage();
  const logs = [];
  page.on('console', (m) => { if (m.type() === 'error') logs.push(m.text()); });
  page.on('pageerror', (e) => logs.push(String(e)));
  const out = { url: job.url, logs };
  try {
    await page.goto(job.url);
    await page.waitForFunction(() => window.gamemeshViewer && (window.gamemeshViewer.ready || window.gamemeshViewer.error), null, { timeout: 30000 });
    out.error = await page.evaluate(() => window.gamemeshViewer.error);
    if (out.error) return out;
    out.counts = await page.evaluate(() => window.gamemeshViewer.counts);
    out.dom_counts = await page.evaluate(() => ({
      meshes: Number(document.getElementById('count-meshes').textContent),
      bones: Number(document.getElementById('count-bones').textContent),
      clips: Number(document.getElementById('count-clips').textContent),
    }));
    out.clips = await page.evaluate(() => window.gamemeshViewer.clips);
    out.textures_shown = await page.locator('#textures img').count();
    out.exports_shown = await page.locator('#exports img').count();
    out.info_rows = await page.locator('#info tr').count();
    if (job.clip !== undefined && job.clip !== null) {
      const rest = await page.evaluate(() => window.gamemeshViewer.poseSignature());
      out.played = await page.evaluate((c) => window.gamemeshViewer.play(c), job.clip);
      await page.waitForTimeout(job.play_ms ?? 400);
      // A loaded machine may draw few frames: give the clock a few seconds to show progress.
      await page.waitForFunction(() => window.gamemeshViewer.state().playedSeconds > 0.05, null, { timeout: 5000 }).catch(() => {});
      // The pose is applied on the next drawn frame: on a loaded machine give it a few seconds
      // to leave the rest pose (a clip that moves nothing still fails the check after that).
      await page.waitForFunction((r) => window.gamemeshViewer.poseSignature().some((v, i) => Math.abs(v - r[i]) > 1e-3), rest, { timeout: 5000 }).catch(() => {});
      out.play_state = await page.evaluate(() => window.gamemeshViewer.state());
      const moved = await page.evaluate(() => window.gamemeshViewer.poseSignature());
      out.pose_change = moved.reduce((m, v, i) => Math.max(m, Math.abs(v - rest[i])), 0);
      await page.evaluate(() => window.gamemeshViewer.pause());
      await page.evaluate(([c, t]) => window.gamemeshViewer.seek(t, c), [job.clip, job.time ?? 0]);
      out.seek_state = await page.evaluate(() => window.gamemeshViewer.state());
    }
    // The toggles: each click changes what is drawn; a second click restores the view.
    out.toggles_before = await page.evaluate(() => window.gamemeshViewer.toggles());
    for (const id of ['#wireframe', '#skeleton']) {
      if (await page.locator(id).isEnabled()) await page.locator(id).check();
    }
    if (await page.locator('#navmesh-toggle').isVisible()) await page.locator('#navmesh').uncheck();
    out.toggles_on = await page.evaluate(() => window.gamemeshViewer.toggles());
    for (const id of ['#wireframe', '#skeleton']) {
      if (await page.locator(id).isEnabled()) await page.locator(id).uncheck();
    }
    if (await page.locator('#navmesh-toggle').isVisible()) await page.locator('#navmesh').check();
    await page.evaluate(() => window.gamemeshViewer.whenRendered());
    if (job.screenshot) await page.locator('#view').screenshot({ path: job.screenshot });
    if (job.page_screenshot) {
      if (job.show_skeleton && await page.locator('#skeleton').isEnabled()) await page.locator('#skeleton').check();
      if (job.viewport) await page.setViewportSize(job.viewport);
      await page.evaluate(() => window.gamemeshViewer.whenRendered());
      await page.screenshot({ path: job.page_screenshot });
    }
  } catch (e) {
    out.error = String(e);
  } finally {
    await page.close();
  }
  return out;
}
