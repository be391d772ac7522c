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

  // Live pages: the project's event stream (/p/<name>/events/stream)
  // says when something changed; the counters are fetched again, and on
  // the inbox, the items board, an item's page and the workers page the
  // <main> element is replaced by the same page fetched again. New
  // attention requests are highlighted. A page with a form being filled
  // in is left alone until the form is left. Without EventSource the
  // counters are polled as before.
  var livePage = /^\/p\/[^\/]+\/(inbox|items|items\/[0-9a-f-]{36}|workers)$|^\/inbox$/.test(location.pathname);
  // A project's pages follow its stream; an admin's inbox across
  // projects names its own (<body data-stream-url>).
  var streamURL = document.body.getAttribute("data-stream-url") ||
    (liveURL && liveURL.replace(/\/live$/, "/events/stream"));
  var pending = null, stale = false;
  // When each request first appeared on this page (ms), for its highlight.
  var arrived = {};
  function editing(main) {
    var a = document.activeElement;
    if (a && main.contains(a) && /^(INPUT|TEXTAREA|SELECT)$/.test(a.tagName)) return true;
    return Array.prototype.some.call(main.querySelectorAll("textarea, input[type=text]"), function (el) {
      return el.value !== el.defaultValue;
    });
  }
  // refreshMain returns a promise settled once the page is swapped in (or
  // left as it is).
  function refreshMain() {
    var main = document.querySelector("main");
    if (!main || !livePage) return Promise.resolve();
    if (editing(main)) { stale = true; return Promise.resolve(); }
    stale = false;
    return fetch(location.href, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var next = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        if (!next || editing(main)) return;
        var known = {}, now = Date.now();
        main.querySelectorAll("[id^=req-]").forEach(function (el) { known[el.id] = true; });
        main.innerHTML = next.innerHTML;
        // A request new to this page keeps its highlight through later
        // refreshes (events often come in bursts): the class stays, and
        // its animation goes on from where it was instead of restarting.
        main.querySelectorAll("[id^=req-]").forEach(function (el) {
          if (!known[el.id] && !arrived[el.id]) arrived[el.id] = now;
          if (arrived[el.id] === undefined) return;
          el.classList.add("fresh");
          el.style.animationDelay = (arrived[el.id] - now) + "ms";
        });
      })
      .catch(function () {});
  }
  // changed refreshes the counters and the page shortly (coalescing a
  // burst of events); then after, when it is a function (an event
  // listener's call passes the event), is called.
  var afters = [];
  function changed(after) {
    if (typeof after === "function") afters.push(after);
    if (pending) return;
    pending = setTimeout(function () {
      pending = null;
      var done = afters;
      afters = [];
      refreshCounters();
      refreshMain().then(function () { done.forEach(function (f) { f(); }); });
    }, 100);
  }
  if (streamURL && window.EventSource) {
    var stream = new EventSource(streamURL);
    stream.onmessage = changed;
    [ "item.created", "item.updated", "item.state_changed", "lease.granted", "lease.ended", "lease.refused",
      "attention.opened", "attention.answered", "attention.dismissed", "attention.overdue", "plan.imported"
    ].forEach(function (t) { stream.addEventListener(t, changed); });
    // Whatever happened while the stream was down is fetched once it is
    // up: also before it first connected, since it starts at the log's
    // horizon of that moment, which may lie past a change made after this
    // page was rendered. data-stream says "open" once the page fetched
    // after opening is in.
    stream.onopen = function () {
      changed(function () { document.body.setAttribute("data-stream", "open"); });
    };
    stream.onerror = function () { document.body.setAttribute("data-stream", "reconnecting"); };
    document.addEventListener("focusout", function () { setTimeout(function () { if (stale) refreshMain(); }, 0); });
  } else if (liveURL) {
    setInterval(refreshCounters, 10000);
  }
  document.querySelectorAll("[data-refresh]").forEach(function (el) {
    var every = parseInt(el.getAttribute("data-interval") || "5", 10) * 1000;
    setInterval(function () { refreshRegion(el); }, every);
  });
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) refreshCounters();
  });

  // Destructive actions ask first: <form data-confirm="Cancel this item?">,
  // or the one button of a form that does it (<button data-confirm=...>).
  document.addEventListener("submit", function (ev) {
    var by = ev.submitter;
    var msg = (by && by.getAttribute("data-confirm")) || (ev.target.getAttribute && ev.target.getAttribute("data-confirm"));
    if (msg && !window.confirm(msg)) ev.preventDefault();
  });
})();
