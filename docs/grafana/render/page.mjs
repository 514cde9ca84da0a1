// Builds the HTML page that shows a dashboard's panels with the data of their queries: panels
// placed by their gridPos on Grafana's 24-column grid, time series drawn with uPlot, stat, gauge
// and bar gauge panels as numbers and bars. The page is self-contained (uPlot inlined) and sets
// window.renderDone when every panel is drawn. panels.js is the code that runs in the page.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const read = (...p) => readFileSync(join(here, ...p), 'utf8');

// Grafana's grid: 24 columns, rows of 30 px, 8 px between cells.
export const grid = { columns: 24, rowHeight: 30, margin: 8, width: 1600 };

// JSON inside a <script> element must not close it.
const scriptJSON = (v) => JSON.stringify(v).replace(/</g, '\\u003c');

// buildPage returns the page for model: { title, subtitle, variables, panels: [{ id, type, title,
// description, unit, gridPos, calcs, timestamps, series: [{ name, values }], notes }] }.
export function buildPage(model) {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHTML(model.title)}</title>
<style>${read('node_modules', 'uplot', 'dist', 'uPlot.min.css')}</style>
<style>${read('page.css')}</style>
</head><body>
<header>
  <h1>${escapeHTML(model.title)}</h1>
  <div class="sub">${escapeHTML(model.subtitle)}</div>
  <div class="vars">${model.variables.map((v) => `<span>${escapeHTML(v.name)} <b>${escapeHTML(v.value)}</b></span>`).join('')}</div>
</header>
<main id="grid"></main>
<script>${read('node_modules', 'uplot', 'dist', 'uPlot.iife.min.js')}</script>
<script>window.dashboardModel = ${scriptJSON({ ...model, grid })};</script>
<script>${read('panels.js')}</script>
</body></html>
`;
}

function escapeHTML(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}
