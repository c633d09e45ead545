// `gradscope html` in a real browser: Debian's Chromium, driven by playwright-core from
// web/node_modules. Reports of the demo runs and of a run with hostile names must render every
// chart, offline, with no error, no dialog and no request beyond the page's own file.
// Environment (set by tests/browser/CMakeLists.txt): GRADSCOPE_BIN, GRADSCOPE_HOSTILE_RUN,
// GRADSCOPE_WEB_DIR, GRADSCOPE_ARTIFACTS, GRADSCOPE_DATA_DIR (or GRADSCOPE_DEFAULT_DATA_DIR).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

const env = process.env;
const chromiumPath = env.GRADSCOPE_CHROMIUM || '/usr/bin/chromium';  // Debian's
const webDir = env.GRADSCOPE_WEB_DIR;
const artifacts = env.GRADSCOPE_ARTIFACTS;
const dataDir = env.GRADSCOPE_DATA_DIR || env.GRADSCOPE_DEFAULT_DATA_DIR;
const firstShown = 'demo-vanishing-trunk';  // saved as report.png: a sick run, flags to see

function missingPrerequisite() {
  for (const name of ['GRADSCOPE_BIN', 'GRADSCOPE_HOSTILE_RUN', 'GRADSCOPE_WEB_DIR', 'GRADSCOPE_ARTIFACTS'])
    if (!env[name]) return `${name} is not set (run through ctest)`;
  if (!fs.existsSync(chromiumPath)) return `${chromiumPath} not found (make deps, or apt-get install chromium)`;
  if (!fs.existsSync(path.join(webDir, 'node_modules', 'playwright-core')))
    return `${webDir}/node_modules/playwright-core not found (make deps, or npm ci --prefix web)`;
  if (!fs.existsSync(path.join(dataDir, 'digits.csv'))) return `${dataDir}/digits.csv not found (make data)`;
  return null;
}

// A machine without the browser fails the test, saying what to install: nothing may skip.
const missing = missingPrerequisite();

function run(file, args, timeoutMs) {
  const r = spawnSync(file, args, { encoding: 'utf8', timeout: timeoutMs });
  const shown = `${path.basename(file)} ${args.join(' ')}`;
  assert.equal(r.error, undefined, `${shown}: ${r.error}`);
  assert.equal(r.status, 0, `${shown} exited ${r.status}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

// The runs and their reports: every demo run, and the hostile one.
function makeReports(tmp) {
  const gradscope = env.GRADSCOPE_BIN;
  const runs = path.join(tmp, 'runs');
  run(gradscope, ['demo', '--quick', '--data-dir', dataDir, '--out', runs], 200_000);
  const hostileDir = path.join(runs, 'hostile');
  const hostile = JSON.parse(run(env.GRADSCOPE_HOSTILE_RUN, [hostileDir], 30_000));
  const names = fs.readdirSync(runs).filter((n) => n.startsWith('demo-')).sort();
  assert.ok(names.includes(firstShown), `demo wrote no ${firstShown} among ${names}`);
  const reports = [...names, 'hostile'].map((name) => {
    const html = path.join(tmp, `${name}.html`);
    const specs = path.join(tmp, `${name}-specs`);
    run(gradscope, ['html', path.join(runs, name), '-o', html, '--spec', specs], 60_000);
    // The findings as agents get them (exit 1 for a sick run): the page must show the same.
    const json = spawnSync(gradscope, ['report', '--json', path.join(runs, name)], { encoding: 'utf8' });
    assert.ok(json.status === 0 || json.status === 1, `report --json ${name} exited ${json.status}`);
    return { name, html, specs, findings: JSON.parse(json.stdout).findings };
  });
  return { reports, hostile };
}

// "What to do" renders the findings of `report --json` (docs/agent-json.md), not texts of its
// own: each one's action and premise is in the section, as text. Module findings are shown for
// the three worst nodes (the rest are in the node table).
async function checkFindings(page, report) {
  const summary = await page.locator('#summary').textContent();
  const shownNodes = [...new Set(report.findings.filter((f) => f.kind === 'module').map((f) => f.node))].slice(0, 3);
  const shown = report.findings.filter((f) => f.kind !== 'module' || shownNodes.includes(f.node));
  for (const f of shown) {
    assert.ok(summary.includes(f.action), `${report.name}: ${f.type} ${f.node}: action not in What to do`);
    assert.ok(summary.includes(f.premise), `${report.name}: ${f.type} ${f.node}: premise not in What to do`);
  }
  if (report.findings.length === 0) assert.match(summary, /No node is flagged|No tree finding/);
}

// Opens a report and records everything the page must not do while it renders.
async function openReport(context, file) {
  const page = await context.newPage();
  const url = pathToFileURL(file).href;
  const problems = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(`console error: ${m.text().split('\n')[0]}`));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('dialog', (d) => {
    problems.push(`dialog (${d.type()}): ${d.message()}`);
    d.dismiss().catch(() => {});
  });
  // The page inlines its libraries and data: its own file is the only request it may make.
  // Chromium reports no data: URL as a request; externalReferences() looks for those.
  page.on('request', (r) => r.url() !== url && problems.push(`request: ${r.url().slice(0, 200)}`));
  await page.goto(url);
  await page
    .waitForFunction(() => document.documentElement.dataset.gradscope, null, { timeout: 20_000 })
    .catch(() => {});
  const state = await page.evaluate(() => document.documentElement.dataset.gradscope ?? '(never set)');
  return { page, problems, state };
}

// Every URL the rendered page refers to other than its own fragments: attributes that load or
// link something, and url() in styles. The page needs none, not even data: URLs. Vega's SVG
// renderer refers to its own gradients and clip paths as url(#id) or url(<page URL>#id).
function externalReferences() {
  const urlAttributes = ['src', 'href', 'xlink:href', 'srcset', 'poster', 'data', 'action', 'formaction', 'background'];
  const self = location.href.split('#')[0];
  const inPage = (u) => u === '' || u.startsWith('#') || u.startsWith(`${self}#`);
  const outside = (text) => [...text.matchAll(/url\(\s*(['"]?)(.*?)\1\s*\)/gi)].some((m) => !inPage(m[2]));
  const found = [];
  for (const e of document.querySelectorAll('*')) {
    for (const a of e.attributes) {
      const v = a.value.trim();
      if ((urlAttributes.includes(a.name) && !inPage(v)) || outside(v))
        found.push(`<${e.localName} ${a.name}="${v.slice(0, 120)}">`);
    }
  }
  for (const sheet of document.styleSheets)
    for (const rule of sheet.cssRules) if (outside(rule.cssText)) found.push(`css: ${rule.cssText.slice(0, 120)}`);
  return found;
}

// Per [data-chart]: whether it holds an svg, and how many data marks Vega drew in it (axes,
// legends and titles have other roles than role-mark, so they do not count).
function drawnCharts() {
  return [...document.querySelectorAll('[data-chart]')].map((el) => {
    const svg = el.querySelector('svg');
    const marks = svg ? [...svg.querySelectorAll('g.role-mark > *')] : [];
    const drawn = marks.filter((m) =>
      m.tagName === 'path' ? (m.getAttribute('d') || '').length > 0
                           : ['rect', 'line', 'text', 'circle', 'image'].includes(m.tagName));
    return { name: el.dataset.chart, svg: svg !== null, marks: drawn.length };
  });
}

function checkSpecs(report, charts) {
  const files = fs.readdirSync(report.specs).sort();
  assert.deepEqual(files, charts.map((c) => `${c.name}.json`).sort(), 'one spec file per chart');
  for (const f of files) {
    const spec = JSON.parse(fs.readFileSync(path.join(report.specs, f), 'utf8'));
    assert.match(String(spec.$schema), /vega-lite/, `${f}: $schema`);
  }
}

async function checkHostile(page, hostile, charts) {
  assert.ok(charts.some((c) => c.name.startsWith('embedding')), 'no embedding chart for the hostile table');
  const text = await page.evaluate(() => document.body.innerText);
  for (const s of hostile) assert.ok(text.includes(s), `the page text lacks ${JSON.stringify(s)}`);
  assert.equal(await page.locator('img[src="x"]').count(), 0, 'an injected <img> became an element');
  assert.equal(await page.evaluate(() => typeof window.__gradscope_xss), 'undefined', 'injected code ran');
  const handlers = await page.evaluate(() =>
    [...document.querySelectorAll('*')].flatMap((e) =>
      [...e.attributes].filter((a) => a.name.startsWith('on')).map((a) => `<${e.localName} ${a.name}>`)));
  assert.deepEqual(handlers, [], 'elements with inline event handlers');
}

test('gradscope html reports render in Chromium', { timeout: 280_000 }, async (t) => {
  assert.equal(missing, null, `${missing}: browser tests may not skip`);
  const { chromium } = createRequire(path.join(webDir, 'package.json'))('playwright-core');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gradscope-browser-'));
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'gradscope-chromium-'));
  fs.mkdirSync(artifacts, { recursive: true });
  const { reports, hostile } = makeReports(tmp);
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    // The machine's network is closed: without the background-networking flags Chromium
    // keeps trying (and failing) to reach Google's services.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  t.after(async () => {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  for (const report of reports) {
    await t.test(report.name, async () => {
      const { page, problems, state } = await openReport(context, report.html);
      try {
        const png = { path: path.join(artifacts, `${report.name}.png`), fullPage: true };
        await page.screenshot(png);
        // The README's picture: the top of a sick report (verdict, advice, the gradient flow).
        if (report.name === firstShown)
          await page.screenshot({ path: path.join(artifacts, 'report.png'), fullPage: true,
                                clip: { x: 0, y: 0, width: 1280, height: 1250 } });
        assert.deepEqual(problems, [], 'the page misbehaved');
        assert.equal(state, 'rendered');
        assert.deepEqual(await page.evaluate(externalReferences), [], 'references outside the page');
        const charts = await page.evaluate(drawnCharts);
        assert.ok(charts.length > 0, 'no [data-chart] element');
        for (const c of charts) {
          assert.ok(c.svg, `chart ${c.name}: no svg`);
          assert.ok(c.marks > 0, `chart ${c.name}: no mark drawn`);
        }
        // A boosted-tree run's page shows its rounds in place of the node table (docs/trees.md).
        if (report.name.startsWith('demo-trees-')) {
          const names = charts.map((c) => c.name).sort();
          assert.deepEqual(names, ['tree-concentration', 'tree-contribution', 'tree-features', 'tree-loss'],
                           'the four round charts');
          assert.equal(await page.locator('table#nodes').count(), 0, 'a node table on a tree run');
        } else {
          assert.equal(await page.locator('table#nodes').count(), 1, 'no table#nodes');
        }
        checkSpecs(report, charts);
        await checkFindings(page, report);
        if (report.name === 'hostile') await checkHostile(page, hostile, charts);
      } finally {
        await page.close();
      }
    });
  }
});
