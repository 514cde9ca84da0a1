// Draws the console's charts with uPlot (embedded next to this file) from the JSON data the
// page carries in <script type="application/json" id="chart-data">. Each chart also has a
// table of the same numbers, so the page is readable without this script. Times are written in
// UTC, as the tables write them and as the daily charts count their days, whatever the browser's
// zone.
(function () {
  "use strict";
  var el = document.getElementById("chart-data");
  if (!el || typeof uPlot === "undefined") {
    return;
  }
  var charts = JSON.parse(el.textContent);
  var colors = ["#0b5fff", "#b42318", "#067647", "#b54708", "#6941c6", "#0e7090", "#c11574", "#4e5ba6"];
  var drawn = [];
  function utc(ts) {
    return uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC");
  }
  function width(box) {
    return Math.max(280, Math.min(box.clientWidth, 1100));
  }
  charts.forEach(function (c) {
    var box = document.getElementById("chart-" + c.id);
    if (!box || !c.x || c.x.length === 0) {
      return;
    }
    var data = [c.x];
    var series = [{}];
    c.series.forEach(function (s, i) {
      data.push(s.values);
      series.push({ label: s.name, stroke: colors[i % colors.length], width: 2, spanGaps: false });
    });
    var plot = new uPlot({
      width: width(box),
      height: 220,
      tzDate: utc,
      series: series,
      axes: [{}, { label: c.unit, size: 60 }],
      legend: { live: true },
      cursor: { drag: { x: false, y: false } }
    }, data, box);
    box.classList.add("drawn");
    drawn.push({ plot: plot, box: box });
  });
  window.addEventListener("resize", function () {
    drawn.forEach(function (d) {
      d.plot.setSize({ width: width(d.box), height: 220 });
    });
  });
})();
