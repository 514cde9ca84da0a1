// Renders docs/grafana/mediagw.json against a real Prometheus scrape of a real gateway, and
// screenshots it. This is a rendering of the dashboard's queries, not Grafana: each panel's
// targets are run through Prometheus's HTTP API (query_range) with the dashboard's template
// variables at "All" and Grafana's $__interval and $__rate_interval worked out as Grafana does,
// and drawn by page.mjs and panels.js.
//
//   node render.mjs            (render.sh builds ./caddy and installs what this needs first)
//
// Environment: RENDER_DURATION (seconds of workload, default 180), RENDER_OUT (the PNG, default
// ../mediagw.png), RENDER_HTML (also keep the page there, and the queried data beside it as
// .json), CADDY (default the repository's
// ./caddy), PROMETHEUS (default prometheus), CHROMIUM (default /usr/bin/chromium).
//
// It starts the gateway (gateway.caddyfile) and a Prometheus scraping the gateway's admin
// /metrics every 2 s, both on loopback ports of a temporary directory; drives the workload of
// workload.mjs; queries; renders; and stops what it started by PID. It exits with status 2 when
// a panel had no data (the picture is still written).
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

import { buildPage, grid } from './page.mjs';
import { callbackReceiver, flakyUpstreams, run } from './workload.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..', '..');
const durationMs = 1000 * Number(process.env.RENDER_DURATION ?? 180);
const out = resolve(process.env.RENDER_OUT ?? join(here, '..', 'mediagw.png'));
const caddyBin = process.env.CADDY ?? join(repo, 'caddy');
const scrapeSeconds = 2;

const log = (...a) => console.log(new Date().toISOString().slice(11, 19), ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// freePort asks the system for an unused loopback port.
function freePort() {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

// Processes this script started, stopped by PID on the way out.
const children = [];
function start(name, cmd, args, env, dir) {
  const logFile = createWriteStream(join(dir, `${name}.log`));
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(logFile);
  child.stderr.pipe(logFile);
  child.on('exit', (code, signal) => { child.exited = true; if (!stopping) log(`${name} (pid ${child.pid}) exited: ${code ?? signal}`); });
  children.push(child);
  log(`started ${name}, pid ${child.pid}`);
  return child;
}
let stopping = false;
async function stopAll() {
  stopping = true;
  for (const c of children) {
    if (!c.exited) process.kill(c.pid, 'SIGTERM');
  }
  for (let i = 0; i < 100 && children.some((c) => !c.exited); i++) await sleep(100);
  for (const c of children) {
    if (!c.exited) process.kill(c.pid, 'SIGKILL');
  }
}

// get fetches url with node:http. (fetch sends Sec-Fetch-Mode, and Caddy's admin endpoint then
// wants an Origin header; Prometheus sends neither.)
function get(url) {
  return new Promise((res, rej) => {
    const req = http.get(url, { timeout: 2000 }, (r) => {
      let text = '';
      r.setEncoding('utf8');
      r.on('data', (c) => { text += c; });
      r.on('end', () => res({ status: r.statusCode, text }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', rej);
  });
}

// waitFor polls url until ok(status, text) holds, for at most ms.
async function waitFor(url, ok, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      const r = await get(url);
      if (ok(r.status, r.text)) return;
    } catch { /* not up yet */ }
    await sleep(250);
  }
  throw new Error(`${url} not ready within ${ms / 1000} s`);
}

// Grafana's interval: the range over the panel's width in pixels (its max data points), rounded,
// and never below the data source's scrape interval; $__rate_interval is
// max($__interval + scrape interval, 4 × scrape interval).
function intervals(rangeSeconds, widthPx) {
  const nice = [1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600];
  const raw = rangeSeconds / widthPx;
  const step = Math.max(scrapeSeconds, nice.find((n) => n >= raw) ?? 3600);
  return { step, rate: Math.max(step + scrapeSeconds, 4 * scrapeSeconds) };
}

// substitute replaces the dashboard's variables ("All": their allValue) and Grafana's built-ins.
function substitute(expr, vars, iv, rangeSeconds) {
  let e = expr
    .replaceAll('$__rate_interval', `${iv.rate}s`)
    .replaceAll('${__rate_interval}', `${iv.rate}s`)
    .replaceAll('$__interval', `${iv.step}s`)
    .replaceAll('${__interval}', `${iv.step}s`)
    .replaceAll('$__range', `${Math.round(rangeSeconds)}s`);
  for (const [name, value] of Object.entries(vars)) {
    e = e.replaceAll(`\${${name}}`, value).replaceAll(`$${name}`, value);
  }
  return e;
}

// legendName applies a target's legendFormat ({{label}}) to a series' labels.
function legendName(format, metric) {
  if (format && format !== '__auto') return format.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, l) => metric[l] ?? '');
  const labels = Object.entries(metric).filter(([k]) => k !== '__name__').map(([k, v]) => `${k}="${v}"`);
  return `${metric.__name__ ?? ''}{${labels.join(', ')}}`;
}

async function queryPanel(prom, panel, vars, startS, endS) {
  const widthPx = Math.round((panel.gridPos.w / grid.columns) * grid.width);
  const iv = intervals(endS - startS, widthPx);
  const first = Math.ceil(startS / iv.step) * iv.step;
  const timestamps = [];
  for (let t = first; t <= endS; t += iv.step) timestamps.push(t);
  const series = [];
  const queries = [];
  for (const target of panel.targets ?? []) {
    if (target.hide) continue;
    const expr = substitute(target.expr, vars, iv, endS - startS);
    queries.push(expr);
    // A target marked instant (and not range) is one query at the end, as Grafana runs it.
    const instant = target.instant === true && target.range !== true;
    const u = new URL(instant ? '/api/v1/query' : '/api/v1/query_range', prom);
    u.search = new URLSearchParams(instant ? { query: expr, time: timestamps.at(-1) }
      : { query: expr, start: first, end: timestamps.at(-1), step: iv.step });
    const r = await fetch(u, { signal: AbortSignal.timeout(30000) });
    const body = await r.json();
    if (body.status !== 'success') throw new Error(`panel "${panel.title}": ${expr}: ${body.error}`);
    for (const s of body.data.result) {
      const byTime = new Map((instant ? [s.value] : s.values).map(([t, v]) => [Math.round(t), Number(v)]));
      series.push({
        name: legendName(target.legendFormat, s.metric),
        values: timestamps.map((t) => {
          const v = byTime.get(t);
          return v === undefined || !Number.isFinite(v) ? null : v;
        }),
      });
    }
  }
  return {
    id: panel.id, type: panel.type, title: panel.title, gridPos: panel.gridPos,
    unit: panel.fieldConfig?.defaults?.unit ?? 'short',
    decimals: panel.fieldConfig?.defaults?.decimals,
    calcs: panel.options?.legend?.calcs ?? [],
    sortBy: panel.options?.legend?.sortBy, sortDesc: panel.options?.legend?.sortDesc,
    timestamps, series, queries, step: iv.step, rateInterval: iv.rate,
  };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'mediagw-dash-'));
  const cleanup = async () => {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  };
  process.on('SIGINT', () => { cleanup().finally(() => process.exit(130)); });
  const servers = [];
  let failed = true;
  try {
    const [admin, gw, sim, promPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
    // The flaky provider's first upstream fails one call in ten, and half of them during an
    // "incident" in the middle of the run.
    let workStart = Date.now();
    const failRate = () => {
      const t = (Date.now() - workStart) / durationMs;
      return t > 0.45 && t < 0.6 ? 0.5 : 0.1;
    };
    const flaky = await flakyUpstreams(failRate);
    const hook = await callbackReceiver();
    servers.push(flaky, hook);

    const env = {
      RENDER_DIR: dir, RENDER_ADMIN_PORT: String(admin), RENDER_GW_PORT: String(gw),
      RENDER_SIM_PORT: String(sim), RENDER_FLAKY_PORT: String(flaky.address().port),
    };
    start('caddy', caddyBin, ['run', '--config', join(here, 'gateway.caddyfile'), '--adapter', 'caddyfile'], env, dir);
    await waitFor(`http://127.0.0.1:${admin}/metrics`, (s, t) => s === 200 && t.includes('mediagw_'), 60000);
    await waitFor(`http://127.0.0.1:${gw}/v1/models`, (s) => s === 401, 30000);

    writeFileSync(join(dir, 'prometheus.yml'), `global:
  scrape_interval: ${scrapeSeconds}s
  evaluation_interval: ${scrapeSeconds}s
scrape_configs:
  - job_name: mediagw
    metrics_path: /metrics
    static_configs:
      - targets: ['127.0.0.1:${admin}']
`);
    const prom = `http://127.0.0.1:${promPort}`;
    start('prometheus', process.env.PROMETHEUS ?? 'prometheus', [
      `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'prometheus')}`,
      `--web.listen-address=127.0.0.1:${promPort}`, '--log.level=warn',
    ], {}, dir);
    await waitFor(`${prom}/-/ready`, (s) => s === 200, 60000);
    await waitFor(`${prom}/api/v1/query?query=up`, (s, t) => s === 200 && t.includes('"1"'), 60000);

    const promVersion = (await (await fetch(`${prom}/api/v1/status/buildinfo`)).json()).data?.version ?? '';
    const startS = Math.floor(Date.now() / 1000) - 10;
    workStart = Date.now();
    log(`workload for ${durationMs / 1000} s against 127.0.0.1:${gw}`);
    const statuses = await run({ base: `http://127.0.0.1:${gw}`, hook: `http://127.0.0.1:${hook.address().port}`, durationMs, log });
    log('answers:', [...statuses.entries()].sort().map(([k, n]) => `${k}: ${n}`).join(', '));
    log(`callback attempts received: ${hook.received()}`);
    await sleep(3 * scrapeSeconds * 1000); // the last scrapes
    const endS = Math.floor(Date.now() / 1000);

    const dashboard = JSON.parse(readFileSync(join(here, '..', 'mediagw.json'), 'utf8'));
    const vars = { datasource: 'prometheus' };
    const shown = [];
    for (const v of dashboard.templating?.list ?? []) {
      if (v.type === 'query' || v.type === 'custom') {
        vars[v.name] = v.allValue ?? '.*';
        shown.push({ name: v.name, value: 'All' });
      }
    }
    const panels = [];
    const empty = [];
    for (const p of dashboard.panels) {
      if (p.type === 'row') {
        panels.push({ id: p.id, type: 'row', title: p.title, gridPos: p.gridPos, series: [] });
        continue;
      }
      const q = await queryPanel(prom, p, vars, startS, endS);
      const points = q.series.reduce((n, s) => n + s.values.filter((v) => v !== null).length, 0);
      log(`panel ${p.id} "${p.title}": ${q.series.length} series, ${points} points (step ${q.step}s, rate interval ${q.rateInterval}s)${q.series.length === 0 ? '  <-- NO DATA' : ''}`);
      for (const s of q.series) log(`    ${s.name}`);
      if (points === 0) empty.push(p.title);
      panels.push(q);
    }
    const range = `${new Date(startS * 1000).toISOString().slice(0, 19)}Z to ${new Date(endS * 1000).toISOString().slice(11, 19)}Z`;
    const html = buildPage({
      title: dashboard.title,
      subtitle: `docs/grafana/mediagw.json: its queries run against Prometheus ${promVersion} scraping a live mediagw every ${scrapeSeconds} s, ${range}, drawn by docs/grafana/render (uPlot), not by Grafana`,
      variables: shown, panels,
    });
    const htmlPath = process.env.RENDER_HTML ? resolve(process.env.RENDER_HTML) : join(dir, 'dashboard.html');
    writeFileSync(htmlPath, html);
    if (process.env.RENDER_HTML) writeFileSync(`${htmlPath}.json`, JSON.stringify(panels, null, 1));

    // Playwright passes --headless itself, and takes the new empty profile directory as
    // launchPersistentContext's first argument (it refuses --user-data-dir in args).
    const browser = await chromium.launchPersistentContext(join(dir, 'chromium'), {
      executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: grid.width, height: 900 },
      timezoneId: 'UTC',
    });
    try {
      const page = await browser.newPage();
      // The page needs nothing from the network: everything is inlined.
      await page.route('**/*', (route) => (route.request().url().startsWith('file:') ? route.continue() : route.abort()));
      await page.goto(`file://${htmlPath}`);
      await page.waitForFunction(() => window.renderDone === true, null, { timeout: 30000 });
      await page.screenshot({ path: out, fullPage: true });
    } finally {
      await browser.close();
    }
    log(`wrote ${out}`);
    failed = false;
    if (empty.length > 0) { // the picture is written, but a panel without data is a finding
      console.error(`panels without data: ${empty.join('; ')}`);
      process.exitCode = 2;
    }
  } finally {
    for (const s of servers) s.close();
    if (failed) { // the logs go with the temporary directory: show their ends first
      for (const name of ['caddy', 'prometheus']) {
        try {
          const lines = readFileSync(join(dir, `${name}.log`), 'utf8').trimEnd().split('\n');
          console.error(`--- last lines of ${name}.log\n${lines.slice(-15).join('\n')}`);
        } catch { /* not started */ }
      }
    }
    await cleanup();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
