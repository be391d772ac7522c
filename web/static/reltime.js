// workgraph web UI: relative times. The server renders every instant as
// <time datetime="…" data-rel>4 min ago</time>; this keeps the text fresh
// (every 30 s, with the same words as the server's relText) and adds the
// reader's local time to the hover title. Without it the page is right as
// it was sent.
(function () {
  "use strict";

  function relText(t, now) {
    var d = t - now, future = d > 0, s = Math.floor(Math.abs(d) / 1000), n, unit;
    if (s < 1) return "just now";
    if (s < 60) { n = s; unit = "s"; }
    else if (s < 3600) { n = Math.floor(s / 60); unit = "min"; }
    else if (s < 86400) { n = Math.floor(s / 3600); unit = "h"; }
    else if (s < 30 * 86400) { n = Math.floor(s / 86400); unit = "d"; }
    else return new Date(t).toISOString().slice(0, 10);
    return future ? "in " + n + " " + unit : n + " " + unit + " ago";
  }

  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function local(d) {
    var off = -d.getTimezoneOffset(), sign = off < 0 ? "-" : "+";
    off = Math.abs(off);
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
      pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()) +
      " local (UTC" + sign + pad(Math.floor(off / 60)) + ":" + pad(off % 60) + ")";
  }

  // skew is the server's clock (<html data-now>, the instant the page was
  // rendered against) minus the browser's, so the text stays what the
  // server said even when the browser's clock is off.
  var sent = Date.parse(document.documentElement.getAttribute("data-now") || "");
  var skew = isNaN(sent) ? 0 : sent - Date.now();

  // refresh updates every <time data-rel> below root (the document, or a
  // region another script just replaced).
  function refresh(root) {
    var now = Date.now() + skew;
    (root || document).querySelectorAll("time[data-rel]").forEach(function (el) {
      var t = Date.parse(el.getAttribute("datetime"));
      if (isNaN(t)) return;
      var text = relText(t, now);
      if (el.textContent !== text) el.textContent = text; // no change, no mutation
      if (!el.hasAttribute("data-rel-title")) {
        var utc = new Date(t).toISOString().replace(".000Z", "Z");
        el.title = utc + " UTC\n" + local(new Date(t));
        el.setAttribute("data-rel-title", "");
      }
    });
  }

  window.workgraphRelTimes = refresh;
  refresh(document);
  setInterval(function () { if (!document.hidden) refresh(document); }, 30000);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) refresh(document); });
  // Regions swapped in by app.js or the live stream carry fresh elements.
  new MutationObserver(function () { refresh(document); }).observe(document.body, { childList: true, subtree: true });
})();
