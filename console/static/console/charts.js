// Charts of the console, drawn with the vendored Chart.js (console/static/console/vendor/) from
// specs a page embeds with Django's json_script: every <canvas data-chart="ID"> is drawn from the
// JSON in the element with that id:
//   {type: "bar"|"line", labels: [...], datasets: [{label, data, colors?}], format: "bytes"|"count"|"days",
//    stacked?: bool, horizontal?: bool, notes?: [text per label, shown in the tooltip]}
// Colours follow the page's CSS variables, so the charts read in light and dark mode alike.
// Redrawn after HTMX swaps a part of the page in.
(function () {
  "use strict";

  function css(name, fallback) {
    var value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  function bytes(v) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return i === 0 ? v + " B" : v.toFixed(1) + " " + units[i];
  }

  var FORMATS = {
    bytes: bytes,
    count: function (v) { return String(v); },
    days: function (v) { return v + " d"; },
  };

  function palette() {
    return [css("--accent", "#2c5fd6"), css("--warn", "#b86e00"), css("--ok", "#1f8a4c"), css("--bad", "#c0342b"),
            "#7c4dcc", "#0f8a8a", "#a0527a", "#5b6b80"];
  }

  function empty(spec) {
    return spec.datasets.every(function (d) { return d.data.every(function (v) { return !v; }); });
  }

  function draw(canvas) {
    var source = document.getElementById(canvas.dataset.chart);
    if (!source || !window.Chart || canvas.dataset.drawn) return;
    var spec = JSON.parse(source.textContent);
    if (empty(spec)) {  // an axis from 0 to "1 B" says nothing: say there is nothing yet
      canvas.dataset.drawn = "1";
      var box = canvas.closest(".chart-box") || canvas;
      var note = document.createElement("p");
      note.className = "hint chart-empty";
      note.textContent = "Nothing to chart yet: every value is 0.";
      box.replaceWith(note);
      return;
    }
    var format = FORMATS[spec.format] || FORMATS.count;
    var ink = css("--ink", "#1d2330"), line = css("--line", "#d9dee7"), colours = palette();
    var value = spec.horizontal ? "x" : "y", category = spec.horizontal ? "y" : "x";
    var scales = {};
    scales[value] = {beginAtZero: true, stacked: !!spec.stacked, grid: {color: line},
                     ticks: {color: ink, precision: spec.format === "days" ? 1 : 0,
                             callback: function (v) { return format(v); }}};
    scales[category] = {stacked: !!spec.stacked, grid: {display: false}, ticks: {color: ink, autoSkip: true}};
    canvas.dataset.drawn = "1";
    new window.Chart(canvas, {
      type: spec.type || "bar",
      data: {
        labels: spec.labels,
        datasets: spec.datasets.map(function (d, i) {
          var colour = colours[i % colours.length];
          return {label: d.label, data: d.data, backgroundColor: d.colors ? d.colors.map(function (c) {
            return c === "warn" ? colours[1] : colours[0];
          }) : colour, borderColor: colour, pointRadius: spec.type === "line" ? 2 : undefined, spanGaps: false};
        }),
      },
      options: {
        indexAxis: spec.horizontal ? "y" : "x",
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        color: ink,
        scales: scales,
        plugins: {
          legend: {display: spec.datasets.length > 1, labels: {color: ink}},
          tooltip: {callbacks: {label: function (ctx) {
            var note = spec.notes ? spec.notes[ctx.dataIndex] : "";
            return ctx.dataset.label + ": " + format(ctx.parsed[value]) + (note ? " (" + note + ")" : "");
          }}},
        },
      },
    });
  }

  function drawAll() {
    document.querySelectorAll("canvas[data-chart]").forEach(draw);
  }

  window.cleanlineCharts = {draw: drawAll};
  document.addEventListener("DOMContentLoaded", drawAll);
  document.addEventListener("htmx:afterSwap", drawAll);
})();
