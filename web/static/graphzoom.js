/* Zoom and pan for the dependency graph (the graph page only). The SVG is
   drawn on the server; this script only moves its viewBox. Without it the
   page still shows the whole graph, scrollable.
   Mouse: wheel zooms at the pointer, drag pans (a click still opens an item).
   Touch: one finger pans, two pinch. Keys (the graph focused): + and -
   zoom, 0 fits, arrows pan. Buttons: +, -, Fit. */
(function () {
  "use strict";
  var wrap = document.getElementById("graph");
  var svg = wrap && wrap.querySelector("svg");
  var tools = document.getElementById("graph-tools");
  if (!svg || !tools || !svg.viewBox || !svg.viewBox.baseVal) return;

  var b = svg.viewBox.baseVal;
  var full = { x: b.x, y: b.y, w: b.width, h: b.height };
  if (!(full.w > 0 && full.h > 0)) return;
  var view = { x: full.x, y: full.y, w: full.w, h: full.h };
  var minW = Math.max(full.w / 25, 40), maxW = full.w * 2;
  var level = tools.querySelector(".zoom-level");

  // The graph gets a box of its own (its natural height, within 240 px and
  // three quarters of the window) that the picture is fitted into.
  wrap.classList.add("zoomable");
  wrap.style.height = Math.round(Math.min(Math.max(full.h + 24, 240), window.innerHeight * 0.75)) + "px";
  svg.removeAttribute("width");
  svg.removeAttribute("height");
  wrap.setAttribute("tabindex", "0");
  wrap.setAttribute("role", "group");
  wrap.setAttribute("aria-label", "Dependency graph: + and - zoom, 0 fits, arrow keys pan");
  tools.hidden = false;

  function apply() {
    svg.setAttribute("viewBox", [view.x, view.y, view.w, view.h].map(function (v) { return v.toFixed(2); }).join(" "));
    var z = Math.round(100 * full.w / view.w);
    wrap.dataset.zoom = String(z);
    if (level) level.textContent = z + "%";
  }

  // toSVG turns a point on the screen into the drawing's coordinates.
  function toSVG(clientX, clientY) {
    var m = svg.getScreenCTM();
    if (!m) return { x: view.x + view.w / 2, y: view.y + view.h / 2 };
    var p = svg.createSVGPoint();
    p.x = clientX; p.y = clientY;
    return p.matrixTransform(m.inverse());
  }
  // unitsPerPixel is how many drawing units one screen pixel spans now.
  function unitsPerPixel() {
    var m = svg.getScreenCTM();
    return m && m.a ? 1 / m.a : view.w / Math.max(wrap.clientWidth, 1);
  }

  // zoomAt scales the view by factor (>1 zooms in) keeping c in place.
  function zoomAt(factor, c) {
    var w = Math.min(Math.max(view.w / factor, minW), maxW);
    var k = view.w / w;
    if (k === 1) return;
    view.x = c.x - (c.x - view.x) / k;
    view.y = c.y - (c.y - view.y) / k;
    view.w = w;
    view.h = view.h / k;
    apply();
  }
  function zoomCenter(factor) { zoomAt(factor, { x: view.x + view.w / 2, y: view.y + view.h / 2 }); }
  function fit() { view = { x: full.x, y: full.y, w: full.w, h: full.h }; apply(); }
  function pan(dx, dy) { view.x += dx; view.y += dy; apply(); }

  tools.addEventListener("click", function (ev) {
    var btn = ev.target.closest("button[data-zoom]");
    if (!btn) return;
    var what = btn.getAttribute("data-zoom");
    if (what === "in") zoomCenter(1.25);
    else if (what === "out") zoomCenter(1 / 1.25);
    else fit();
  });

  wrap.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var dy = ev.deltaY * (ev.deltaMode === 1 ? 16 : ev.deltaMode === 2 ? 400 : 1);
    zoomAt(Math.exp(-dy * 0.0015), toSVG(ev.clientX, ev.clientY));
  }, { passive: false });

  wrap.addEventListener("keydown", function (ev) {
    if (ev.target !== wrap || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    var step = 0.1;
    switch (ev.key) {
      case "+": case "=": zoomCenter(1.25); break;
      case "-": case "_": zoomCenter(1 / 1.25); break;
      case "0": fit(); break;
      case "ArrowLeft": pan(-view.w * step, 0); break;
      case "ArrowRight": pan(view.w * step, 0); break;
      case "ArrowUp": pan(0, -view.h * step); break;
      case "ArrowDown": pan(0, view.h * step); break;
      default: return;
    }
    ev.preventDefault();
  });

  // Pointers: one drags the view, two pinch. A drag of more than a few
  // pixels is not a click, so the node under it does not open.
  var pointers = new Map();
  var drag = null, pinch = null, dragged = false;
  wrap.addEventListener("pointerdown", function (ev) {
    if (ev.pointerType === "mouse" && ev.button !== 0) return;
    pointers.set(ev.pointerId, { x: ev.clientX, y: ev.clientY });
    dragged = false;
    if (pointers.size === 1) {
      drag = { id: ev.pointerId, x: ev.clientX, y: ev.clientY, vx: view.x, vy: view.y, upp: unitsPerPixel() };
      pinch = null;
    } else if (pointers.size === 2) {
      var ps = Array.from(pointers.values());
      pinch = { d: Math.hypot(ps[0].x - ps[1].x, ps[0].y - ps[1].y) || 1 };
      drag = null;
    }
  });
  wrap.addEventListener("pointermove", function (ev) {
    if (!pointers.has(ev.pointerId)) return;
    pointers.set(ev.pointerId, { x: ev.clientX, y: ev.clientY });
    if (pinch && pointers.size === 2) {
      var ps = Array.from(pointers.values());
      var d = Math.hypot(ps[0].x - ps[1].x, ps[0].y - ps[1].y) || 1;
      zoomAt(d / pinch.d, toSVG((ps[0].x + ps[1].x) / 2, (ps[0].y + ps[1].y) / 2));
      pinch.d = d;
      dragged = true;
      return;
    }
    if (!drag || ev.pointerId !== drag.id) return;
    var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (!dragged && Math.hypot(dx, dy) < 4) return;
    if (!dragged) {
      dragged = true;
      wrap.classList.add("panning");
      try { wrap.setPointerCapture(ev.pointerId); } catch (e) { /* the pointer is gone */ }
    }
    view.x = drag.vx - dx * drag.upp;
    view.y = drag.vy - dy * drag.upp;
    apply();
  });
  function end(ev) {
    pointers.delete(ev.pointerId);
    if (pointers.size < 2) pinch = null;
    if (pointers.size === 0) { drag = null; wrap.classList.remove("panning"); }
  }
  wrap.addEventListener("pointerup", end);
  wrap.addEventListener("pointercancel", end);
  // Links and text in the drawing are not dragged out of it.
  wrap.addEventListener("dragstart", function (ev) { ev.preventDefault(); });
  // After a drag, the click that ends it opens nothing.
  wrap.addEventListener("click", function (ev) {
    if (dragged) { ev.preventDefault(); ev.stopPropagation(); dragged = false; }
  }, true);

  apply();
})();
