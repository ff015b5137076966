// Times and copy buttons (console/templatetags/display.py, console/zones.py). The server writes
// every time in the user's zone (their choice, else the browser's, else the console's) and
// names it; nothing is rewritten here. Until the user chooses a zone, this script tells the
// server the browser's (the cleanline_tz cookie) and, when the page was written in another
// zone, reloads it once, so that every time on it (options and texts too) is in one zone.
// Timeline filters carry the page's zone (the hidden `zone` field): a date typed in From/To
// means a day in the zone the times are shown in.
(function () {
  "use strict";
  const COOKIE = "cleanline_tz";

  function localise(root) {
    root.querySelectorAll("time[datetime][data-local]").forEach((el) => { el.dataset.localised = "true"; });
    const zone = document.body.dataset.zone;
    root.querySelectorAll("input[name=zone]").forEach((input) => { if (!input.value && zone) input.value = zone; });
  }

  function learnZone() {
    const body = document.body;
    const browser = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (!browser || body.dataset.zoneSource === "chosen") return;
    const cookie = document.cookie.split("; ").find((c) => c.startsWith(`${COOKIE}=`));
    if (cookie !== `${COOKIE}=${browser}`) {
      document.cookie = `${COOKIE}=${browser}; path=/; max-age=31536000; SameSite=Lax`;
    }
    const tried = `${COOKIE}-reloaded-${browser}`;
    if (body.dataset.zone !== browser && body.dataset.method === "GET" && !sessionStorage.getItem(tried)) {
      sessionStorage.setItem(tried, "1");  // once: a server that does not know the zone keeps its own
      window.location.reload();
    }
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
  document.addEventListener("DOMContentLoaded", () => { learnZone(); localise(document); });
  document.addEventListener("htmx:load", (event) => localise(event.target));  // parts htmx swaps in
})();
