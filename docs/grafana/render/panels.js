// Runs in the rendered page: draws window.dashboardModel's panels (see page.mjs) and sets
// window.renderDone. Time series are uPlot charts with a table legend of the calcs the panel's
// JSON asks for; bargauge, stat and gauge panels show each series' last value.
(function () {
  'use strict';
  const model = window.dashboardModel;
  const g = model.grid;
  const main = document.getElementById('grid');
  const colW = (g.width - 32 - (g.columns - 1) * g.margin) / g.columns;
  // Grafana's classic palette, in its order.
  const palette = ['#73bf69', '#f2cc0c', '#8ab8ff', '#ff780a', '#f2495c', '#5794f2', '#b877d9', '#705da0',
    '#37872d', '#fade2a', '#447ebc', '#c15c17', '#890f02', '#0a437c', '#6d1f62', '#584477'];

  // format renders v in a Grafana unit, with the panel's decimals when it sets them.
  function format(unit, v, decimals) {
    if (v === null || v === undefined || Number.isNaN(v)) return '–';
    const num = (x, suffix) => {
      const a = Math.abs(x);
      const d = decimals ?? (a === 0 ? 0 : a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
      return x.toFixed(d) + suffix;
    };
    switch (unit) {
      case 'percentunit': return num(v * 100, '%');
      case 'percent': return num(v, '%');
      case 'reqps': return num(v, ' req/s');
      case 'ops': return num(v, ' ops/s');
      case 's':
        if (Math.abs(v) < 1e-3 && v !== 0) return num(v * 1e6, ' µs');
        if (Math.abs(v) < 1) return num(v * 1e3, ' ms');
        return num(v, ' s');
      case 'ms': return num(v, ' ms');
      case 'none': return num(v, '');
      default: {
        const a = Math.abs(v);
        if (a >= 1e9) return num(v / 1e9, ' Bil');
        if (a >= 1e6) return num(v / 1e6, ' Mil');
        if (a >= 1e3) return num(v / 1e3, ' K');
        return num(v, '');
      }
    }
  }

  const calcs = {
    mean: (vs) => vs.length ? vs.reduce((a, b) => a + b, 0) / vs.length : null,
    max: (vs) => vs.length ? Math.max(...vs) : null,
    min: (vs) => vs.length ? Math.min(...vs) : null,
    last: (vs) => vs.length ? vs[vs.length - 1] : null,
    lastNotNull: (vs) => vs.length ? vs[vs.length - 1] : null,
    sum: (vs) => vs.reduce((a, b) => a + b, 0),
  };
  const values = (s) => s.values.filter((v) => v !== null && !Number.isNaN(v));

  function box(p) {
    const gp = p.gridPos;
    const el = document.createElement('div');
    el.style.left = `${gp.x * (colW + g.margin)}px`;
    el.style.top = `${gp.y * (g.rowHeight + g.margin)}px`;
    el.style.width = `${gp.w * colW + (gp.w - 1) * g.margin}px`;
    el.style.height = `${gp.h * g.rowHeight + (gp.h - 1) * g.margin}px`;
    main.appendChild(el);
    return el;
  }

  function panelShell(p) {
    const el = box(p);
    el.className = 'panel';
    const title = document.createElement('div');
    title.className = 'title';
    title.textContent = p.title;
    const body = document.createElement('div');
    body.className = 'body';
    el.append(title, body);
    if (!p.series.some((s) => values(s).length > 0)) {
      body.innerHTML = '<div class="nodata">No data</div>';
      return null;
    }
    return { el, body };
  }

  // legendTable adds the table legend: the panel's calcs per series, sorted as the panel's
  // legend.sortBy and sortDesc say (colours stay those of the query order, as in Grafana).
  function legendTable(p, shell, maxRows) {
    const names = p.calcs.filter((c) => calcs[c]);
    const div = document.createElement('div');
    div.className = 'legend';
    let entries = p.series.map((s, i) => ({ s, i, vs: values(s) }));
    const by = (p.sortBy ?? '').toLowerCase();
    if (calcs[by]) {
      const key = (e) => calcs[by](e.vs) ?? -Infinity;
      entries = entries.sort((a, b) => (p.sortDesc ? key(b) - key(a) : key(a) - key(b)));
    } else if (by === 'name') {
      entries = entries.sort((a, b) => a.s.name.localeCompare(b.s.name) * (p.sortDesc ? -1 : 1));
    }
    const rows = entries.map(({ s, i, vs }) => {
      const cells = names.map((c) => `<td>${format(p.unit, calcs[c](vs), p.decimals)}</td>`).join('');
      return `<tr><td><i style="background:${palette[i % palette.length]}"></i>${escape(s.name)}</td>${cells}</tr>`;
    });
    const shown = rows.slice(0, maxRows);
    const more = rows.length > shown.length ? `<div class="more">+${rows.length - shown.length} more series</div>` : '';
    div.innerHTML = `<table><tr><th>Name</th>${names.map((c) => `<th>${c === 'mean' ? 'Mean' : c === 'max' ? 'Max' : c}</th>`).join('')}</tr>${shown.join('')}</table>${more}`;
    shell.el.appendChild(div);
  }

  // clock renders Unix seconds as a 24-hour UTC time, HH:MM, or HH:MM:SS between minutes.
  function clock(ts) {
    const t = new Date(ts * 1000).toISOString();
    return ts % 60 === 0 ? t.slice(11, 16) : t.slice(11, 19);
  }

  function escape(s) {
    return String(s).replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' }[c]));
  }

  function timeseries(p) {
    const shell = panelShell(p);
    if (!shell) return;
    // The legend takes at most 45% of the panel, as a scrolled table would show at first.
    const total = shell.el.clientHeight;
    const maxRows = Math.max(1, Math.floor((total * 0.45 - 18) / 17));
    legendTable(p, shell, maxRows);
    const width = shell.body.clientWidth;
    const height = Math.max(60, shell.body.clientHeight);
    const opts = {
      width, height,
      legend: { show: false },
      cursor: { show: false },
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
      scales: { x: { time: true }, y: { range: (u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] } },
      axes: [
        { stroke: '#8e8e99', space: 70, grid: { stroke: 'rgba(204,204,220,0.07)' }, ticks: { stroke: 'rgba(204,204,220,0.07)' },
          values: (u, splits) => splits.map((ts) => clock(ts)) },
        { stroke: '#8e8e99', size: 80, grid: { stroke: 'rgba(204,204,220,0.07)' }, ticks: { show: false },
          values: (u, vals) => vals.map((v) => format(p.unit, v)) },
      ],
      series: [{}].concat(p.series.map((s, i) => ({
        label: s.name, stroke: palette[i % palette.length], width: 1.5,
        fill: palette[i % palette.length] + '1a', points: { show: false },
      }))),
    };
    const data = [p.timestamps].concat(p.series.map((s) => s.values));
    new uPlot(opts, data, shell.body);
  }

  function bargauge(p) {
    const shell = panelShell(p);
    if (!shell) return;
    const last = p.series.map((s) => ({ name: s.name, v: calcs.lastNotNull(values(s)) }))
      .filter((x) => x.v !== null).sort((a, b) => b.v - a.v);
    const top = Math.max(...last.map((x) => x.v), 1e-9);
    const div = document.createElement('div');
    div.className = 'bars';
    div.innerHTML = last.map((x) => `<div class="bar"><span class="name">${escape(x.name)}</span>` +
      `<span class="track"><span class="fill" style="width:${(100 * x.v / top).toFixed(1)}%"></span></span>` +
      `<span class="value">${format(p.unit, x.v, p.decimals)}</span></div>`).join('');
    shell.body.appendChild(div);
  }

  function stat(p) {
    const shell = panelShell(p);
    if (!shell) return;
    const vs = p.series.map((s) => calcs.lastNotNull(values(s))).filter((v) => v !== null);
    const div = document.createElement('div');
    div.className = 'stat';
    div.textContent = vs.map((v) => format(p.unit, v, p.decimals)).join('  ');
    shell.body.appendChild(div);
  }

  let bottom = 0;
  for (const p of model.panels) {
    bottom = Math.max(bottom, (p.gridPos.y + p.gridPos.h) * (g.rowHeight + g.margin));
    if (p.type === 'row') {
      const el = box(p);
      el.className = 'row';
      el.textContent = p.title;
    } else if (p.type === 'timeseries' || p.type === 'graph') {
      timeseries(p);
    } else if (p.type === 'bargauge') {
      bargauge(p);
    } else {
      stat(p); // stat, gauge and anything else: the last value
    }
  }
  main.style.height = `${bottom}px`;
  window.renderDone = true;
})();
