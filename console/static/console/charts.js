// Charts of the console, drawn with the vendored Chart.js (console/static/console/vendor/) from
// the data a page embeds with Django's json_script. Colours follow the page's CSS variables,
// so the charts read in light and dark mode alike. Redrawn after HTMX swaps a part in.
(function () {
  "use strict";

  function css(name, fallback) {
    var value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  function human(bytes) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0, v = bytes;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return i === 0 ? v + " B" : v.toFixed(1) + " " + units[i];
  }

  function retention() {
    var canvas = document.getElementById("retention-chart");
    var source = document.getElementById("retention-data");
    if (!canvas || !source || !window.Chart || canvas.dataset.drawn) return;
    var data = JSON.parse(source.textContent);
    var accent = css("--accent", "#2563eb"), warn = css("--warn", "#b45309"), text = css("--ink", "#1d2330");
    canvas.dataset.drawn = "1";
    new window.Chart(canvas, {
      type: "bar",
      data: {
        labels: data.labels,
        datasets: [{
          label: "bytes freed",
          data: data.bytes,
          backgroundColor: data.below.map(function (b) { return b ? warn : accent; }),
        }],
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        color: text,
        scales: {
          y: { beginAtZero: true, ticks: { color: text, callback: function (v) { return human(v); } } },
          x: { ticks: { color: text } },
        },
        plugins: {
          legend: { display: false },
          tooltip: {
            callbacks: {
              label: function (ctx) {
                return human(ctx.parsed.y) + " in " + data.files[ctx.dataIndex] + " files" +
                  (data.below[ctx.dataIndex] ? " (below the table's setting)" : "");
              },
            },
          },
        },
      },
    });
  }

  window.cleanlineCharts = { retention: retention };
  document.addEventListener("DOMContentLoaded", retention);
  document.addEventListener("htmx:afterSwap", retention);
})();
