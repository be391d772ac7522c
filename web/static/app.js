// workgraph web UI: progressive enhancement only. Every page and every
// action works without this file; it keeps counters and tables fresh and
// asks before destructive actions.
(function () {
  "use strict";

  // Live counters: <span data-live="attention"> etc. are refreshed from the
  // JSON at <body data-live-url>.
  var liveURL = document.body.getAttribute("data-live-url");
  function refreshCounters() {
    if (!liveURL || document.hidden) return;
    fetch(liveURL, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data) return;
        document.querySelectorAll("[data-live]").forEach(function (el) {
          var v = data[el.getAttribute("data-live")];
          if (v === undefined) return;
          el.textContent = String(v);
          el.classList.toggle("zero", v === 0);
        });
      })
      .catch(function () {});
  }

  // Live regions: <div data-refresh="/url" data-interval="5"> is replaced
  // by the HTML fragment the server renders at that URL.
  function refreshRegion(el) {
    if (document.hidden) return;
    fetch(el.getAttribute("data-refresh"), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null) el.innerHTML = html; })
      .catch(function () {});
  }

  if (liveURL) setInterval(refreshCounters, 10000);
  document.querySelectorAll("[data-refresh]").forEach(function (el) {
    var every = parseInt(el.getAttribute("data-interval") || "5", 10) * 1000;
    setInterval(function () { refreshRegion(el); }, every);
  });
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) refreshCounters();
  });

  // Destructive actions ask first: <form data-confirm="Cancel this item?">.
  document.addEventListener("submit", function (ev) {
    var msg = ev.target.getAttribute && ev.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) ev.preventDefault();
  });
})();
