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
  // every data-interval seconds (a decimal number; the server's
  // LiveRefresh) by the HTML fragment the server renders at that URL, as
  // the live pages are (see swap): not while the person is busy in it, not
  // when nothing but times changed, keeping the focus. data-refreshed
  // counts the fetches that ended.
  function refreshRegion(el) {
    if (document.hidden || busy(el)) return;
    fetch(el.getAttribute("data-refresh"), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null || busy(el)) return;
        var next = document.createElement("div");
        next.innerHTML = html;
        var now = settled(next);
        if (now === el.workgraphShown) return;
        el.workgraphShown = now;
        swap(el, next);
      })
      .catch(function () {})
      .then(function () {
        el.setAttribute("data-refreshed", String(parseInt(el.getAttribute("data-refreshed") || "0", 10) + 1));
      });
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
  // busy says whether swapping <main> now would undo what the person is
  // doing in it: a form being filled in, a press whose click has not
  // landed yet (it would land on a replaced element and be lost), or text
  // selected (to copy a question, say). The page is then left alone and
  // fetched again once that ends (focusout, pointerup, selectionchange).
  var pressing = false;
  function busy(main) {
    if (pressing) return true;
    var a = document.activeElement;
    if (a && main.contains(a) && /^(INPUT|TEXTAREA|SELECT)$/.test(a.tagName) &&
        !/^(submit|button|checkbox|radio)$/.test(a.type)) return true;
    var sel = window.getSelection && window.getSelection();
    if (sel && !sel.isCollapsed && sel.anchorNode && main.contains(sel.anchorNode)) return true;
    return Array.prototype.some.call(main.querySelectorAll("textarea, input, select"), function (el) {
      if (el.type === "checkbox" || el.type === "radio") return el.checked !== el.defaultChecked;
      if (el.tagName === "SELECT") {
        return Array.prototype.some.call(el.options, function (o) { return o.selected !== o.defaultSelected; });
      }
      return el.type !== "hidden" && el.value !== el.defaultValue;
    });
  }
  // settled is a page's <main> as the server rendered it, without the
  // text that only says how long ago something was (it changes at every
  // fetch and reltime.js keeps it fresh): a fetch whose settled text is
  // the one shown changes nothing on the page.
  function settled(main) {
    var copy = main.cloneNode(true);
    copy.querySelectorAll("time[data-rel], .waited").forEach(function (el) {
      el.textContent = "";
      el.removeAttribute("title");
      el.removeAttribute("data-rel-title");
    });
    return copy.innerHTML.trim();
  }
  // placeKey names a focusable element so that its counterpart in the
  // swapped-in page can be found: its id, else what it does (its form's
  // action, name and value; a link's address) and its words.
  function placeKey(el) {
    if (!el || !el.tagName) return null;
    if (el.id) return "#" + el.id;
    var form = el.form ? el.form.getAttribute("action") || "" : "";
    return [el.tagName, form, el.getAttribute("name") || "", el.getAttribute("value") || "",
      el.getAttribute("href") || "", el.textContent.trim()].join("|");
  }
  // detailsKey names a <details> by the element with an id around it and
  // its summary's words, so a section the person opened (or closed) stays
  // so when the page is swapped in; one whose summary now says something
  // else takes the server's state.
  function detailsKey(d) {
    var owner = d.parentElement && d.parentElement.closest("[id]");
    var s = d.querySelector("summary");
    return (owner ? owner.id : "") + "|" + (s ? s.textContent.trim() : "");
  }
  // What the server last sent of <main>, settled: read at once, before
  // anything on the page changes it.
  var shown = document.querySelector("main") ? settled(document.querySelector("main")) : null;
  // refreshMain returns a promise settled once the page is swapped in (or
  // left as it is, or put off while the person is busy with it); <body
  // data-refreshed> counts the refreshes that ended so.
  function refreshMain() {
    var main = document.querySelector("main");
    if (!main || !livePage) return Promise.resolve();
    if (busy(main)) { stale = true; return Promise.resolve().then(counted); }
    stale = false;
    return fetch(location.href, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var next = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        if (!next) return;
        if (busy(main)) { stale = true; return; }
        var now = settled(next);
        if (now === shown) return;
        shown = now;
        swap(main, next);
      })
      .catch(function () {})
      .then(counted);
  }
  function counted() {
    var n = parseInt(document.body.getAttribute("data-refreshed") || "0", 10) + 1;
    document.body.setAttribute("data-refreshed", String(n));
  }
  // swap replaces main's (or a live region's) content by next's, keeping
  // the person's place:
  // the focused control, the sections opened or closed, the highlight of
  // requests new to the page.
  function swap(main, next) {
    var focused = main.contains(document.activeElement) ? placeKey(document.activeElement) : null;
    var opened = {};
    main.querySelectorAll("details").forEach(function (d) { opened[detailsKey(d)] = d.open; });
    var known = {}, now = Date.now();
    main.querySelectorAll("[id^=req-]").forEach(function (el) { known[el.id] = true; });
    main.innerHTML = next.innerHTML;
    restoreDrafts(main);
    main.querySelectorAll("details").forEach(function (d) {
      var k = detailsKey(d);
      if (Object.prototype.hasOwnProperty.call(opened, k)) d.open = opened[k];
    });
    if (focused) {
      var again = Array.prototype.find.call(
        main.querySelectorAll("a[href], button, input, select, textarea, summary, [tabindex]"),
        function (el) { return placeKey(el) === focused; });
      if (again) again.focus({ preventScroll: true });
    }
    // A request new to this page keeps its highlight through later
    // refreshes (events often come in bursts): the class stays, and its
    // animation goes on from where it was instead of restarting.
    main.querySelectorAll("[id^=req-]").forEach(function (el) {
      if (!known[el.id] && !arrived[el.id]) arrived[el.id] = now;
      if (arrived[el.id] === undefined) return;
      el.classList.add("fresh");
      el.style.animationDelay = (arrived[el.id] - now) + "ms";
    });
  }
  // A press ends with its pointerup (or pointercancel, when a touch turns
  // into a scroll); one released outside the window, which the page never
  // hears of, ends when the window loses the focus or after 10 s.
  var pressTimer = null;
  document.addEventListener("pointerdown", function (ev) {
    var main = document.querySelector("main");
    if (!main || !main.contains(ev.target)) return;
    pressing = true;
    clearTimeout(pressTimer);
    pressTimer = setTimeout(released, 10000);
  }, true);
  function released() {
    if (!pressing) return;
    clearTimeout(pressTimer);
    // After the click of this press has been dispatched.
    setTimeout(function () { pressing = false; if (stale) refreshMain(); }, 0);
  }
  document.addEventListener("pointerup", released, true);
  document.addEventListener("pointercancel", released, true);
  window.addEventListener("blur", released);
  document.addEventListener("selectionchange", function () {
    var sel = window.getSelection();
    if (stale && sel && sel.isCollapsed) setTimeout(function () { if (stale) refreshMain(); }, 0);
  });
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
    document.addEventListener("reset", function () { setTimeout(function () { if (stale) refreshMain(); }, 0); });
  } else if (liveURL) {
    setInterval(refreshCounters, 10000);
  }
  document.querySelectorAll("[data-refresh]").forEach(function (el) {
    el.workgraphShown = settled(el);
    var every = parseFloat(el.getAttribute("data-interval") || "5") * 1000;
    if (!(every > 0)) every = 5000;
    setInterval(function () { refreshRegion(el); }, every);
  });
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) refreshCounters();
  });

  // Drafts: what a person types into an attention request's form (the
  // answer, a decision's note or result) is kept in this browser
  // (localStorage, per request and field) until the answer is accepted:
  // a post that finds the session ended (signed out in another tab,
  // expired) sends nothing and leads through the sign-in back to the
  // page, where the text is put back in its empty box. The confirmation
  // of an answer (data-answered-request) forgets the request's drafts;
  // signing out in this tab forgets them all; a draft older than a day is
  // dropped. Nothing is ever sent by the script: the person sends again.
  var draftPrefix = "workgraph-draft:", draftTTL = 24 * 3600 * 1000;
  function drafts() {
    try { return window.localStorage; } catch (e) { return null; }
  }
  function draftKey(el) {
    if (!el || el.tagName !== "TEXTAREA" || !el.name || !el.closest) return null;
    var art = el.closest("article.request[id^='req-']");
    return art ? draftPrefix + art.id.slice(4) + ":" + el.name : null;
  }
  function keepDraft(el) {
    var k = draftKey(el), s = drafts();
    if (!k || !s) return;
    try {
      if (el.value.trim() === "") s.removeItem(k);
      else s.setItem(k, JSON.stringify({ v: el.value, t: Date.now() }));
    } catch (e) {}
  }
  function forgetDrafts(prefix) {
    var s = drafts();
    if (!s) return;
    try {
      for (var i = s.length - 1; i >= 0; i--) {
        var k = s.key(i);
        if (k && k.indexOf(prefix) === 0) s.removeItem(k);
      }
    } catch (e) {}
  }
  function restoreDrafts(root) {
    var s = drafts();
    if (!s) return;
    root.querySelectorAll("[data-answered-request]").forEach(function (el) {
      forgetDrafts(draftPrefix + el.getAttribute("data-answered-request") + ":");
    });
    try {
      for (var i = s.length - 1; i >= 0; i--) {
        var k = s.key(i);
        if (!k || k.indexOf(draftPrefix) !== 0) continue;
        var d = null;
        try { d = JSON.parse(s.getItem(k)); } catch (e) {}
        if (!d || typeof d.v !== "string" || !(Date.now() - d.t < draftTTL)) s.removeItem(k);
      }
    } catch (e) {}
    root.querySelectorAll("article.request textarea[name]").forEach(function (el) {
      var k = draftKey(el), d = null;
      if (!k || el.value !== "") return;
      try { d = JSON.parse(s.getItem(k)); } catch (e) {}
      if (!d || typeof d.v !== "string") return;
      el.value = d.v;
      if (!el.nextElementSibling || !el.nextElementSibling.classList.contains("draft-note")) {
        var note = document.createElement("p");
        note.className = "draft-note small";
        note.setAttribute("role", "status");
        note.textContent = "Your unsent text was put back. Send it again when it is right.";
        el.insertAdjacentElement("afterend", note);
      }
    });
  }
  document.addEventListener("input", function (ev) { keepDraft(ev.target); });
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (form.getAttribute && form.getAttribute("action") === "/signout") {
      forgetDrafts(draftPrefix);
      return;
    }
    // Kept again as it is sent: a sign-out in another tab forgot it.
    if (form.querySelectorAll) form.querySelectorAll("textarea[name]").forEach(keepDraft);
  }, true);
  restoreDrafts(document);

  // Destructive actions ask first: <form data-confirm="Cancel this item?">,
  // or the one button of a form that does it (<button data-confirm=...>).
  document.addEventListener("submit", function (ev) {
    var by = ev.submitter;
    var msg = (by && by.getAttribute("data-confirm")) || (ev.target.getAttribute && ev.target.getAttribute("data-confirm"));
    if (msg && !window.confirm(msg)) ev.preventDefault();
  });
})();
