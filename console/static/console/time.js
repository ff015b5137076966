// Times in the viewer's own zone, and copy buttons (console/templatetags/display.py).
// The server writes every <time data-local> in the console's zone; this rewrites it in the
// browser's zone, in the same style. Timeline filters learn the browser's zone (the hidden
// `zone` field) so that a date typed in From/To means a day here, like the times shown.
(function () {
  "use strict";
  const pad = (n, width) => String(n).padStart(width || 2, "0");
  const zoneName = (d) => {
    const part = new Intl.DateTimeFormat("en-US", {timeZoneName: "short"}).formatToParts(d)
      .find((p) => p.type === "timeZoneName");
    return part ? part.value : "";
  };
  const formats = {
    datetime: (d) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
      `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${zoneName(d)}`,
    date: (d) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`,
    daytime: (d) => `${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`,
    time: (d) => `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`,
  };

  function localise(root) {
    root.querySelectorAll("time[datetime][data-local]").forEach((el) => {
      const d = new Date(el.getAttribute("datetime"));
      const format = formats[el.dataset.local];
      if (!format || isNaN(d.getTime())) return;
      el.textContent = format(d);
      el.dataset.localised = "true";
    });
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    root.querySelectorAll("input[name=zone]").forEach((input) => { if (!input.value && zone) input.value = zone; });
  }

  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    const area = document.createElement("textarea");  // plain http: the older way
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } finally { area.remove(); }
    return Promise.resolve();
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("button.copy[data-copy]");
    if (!button) return;
    event.preventDefault();
    copy(button.dataset.copy).then(() => {
      button.classList.add("copied");
      button.setAttribute("aria-label", `Copied ${button.dataset.copy}`);
      setTimeout(() => { button.classList.remove("copied"); button.setAttribute("aria-label", `Copy ${button.dataset.copy}`); }, 1500);
    });
  });
  document.addEventListener("DOMContentLoaded", () => localise(document));
  document.addEventListener("htmx:load", (event) => localise(event.target));  // parts htmx swaps in
})();
