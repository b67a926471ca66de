// The site's only script: no network, no libraries.
// 1. Search the table list: every word must appear in the table's own text or in one of its
//    columns (name or description); the matching columns are listed under the table.
(function () {
  var input = document.getElementById("filter");
  if (!input) return;
  var rows = Array.prototype.slice.call(document.querySelectorAll("#tables tbody tr"));
  var count = document.getElementById("filter-count");
  rows.forEach(function (row) {
    row._columns = JSON.parse(row.getAttribute("data-columns") || "[]").map(function (c) {
      return { name: c[0], description: c[1], text: (c[0] + " " + c[1]).toLowerCase() };
    });
  });
  function search() {
    var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    rows.forEach(function (row) {
      var text = row.getAttribute("data-search");
      var hits = row._columns.filter(function (c) {
        return words.some(function (w) { return text.indexOf(w) < 0 && c.text.indexOf(w) >= 0; });
      });
      var match = words.every(function (w) {
        return text.indexOf(w) >= 0 || row._columns.some(function (c) { return c.text.indexOf(w) >= 0; });
      });
      row.hidden = !match;
      if (match) shown++;
      var box = row.querySelector(".hits");
      box.textContent = "";  // an empty box takes no room (style.css)
      if (!match || !hits.length) return;
      box.appendChild(document.createTextNode(hits.length === 1 ? "column " : "columns "));
      hits.slice(0, 6).forEach(function (c, i) {
        if (i) box.appendChild(document.createTextNode(", "));
        var code = document.createElement("code");
        code.textContent = c.name;
        box.appendChild(code);
        if (c.description) box.appendChild(document.createTextNode(" (" + c.description + ")"));
      });
      if (hits.length > 6) box.appendChild(document.createTextNode(", …"));
    });
    count.textContent = words.length ? shown + " of " + rows.length + " tables" : "";
  }
  input.addEventListener("input", search);
  if (input.value) search();  // the browser restored the box's text
})();

// 2. The lineage graph: pan (drag, scroll), zoom (buttons, Ctrl + wheel), highlight a node's
//    edges on hover, and focus on one table and its neighbours (#focus=<table> in the URL).
(function () {
  var svg = document.querySelector("svg.lineage");
  if (!svg) return;
  var wrap = svg.parentNode;
  var g = svg.getAttribute("data-geometry").split(" ").map(Number);
  var W = g[0], H = g[1], COL = g[0] + g[2], STEP = g[1] + g[3], TOP = g[4], LEFT = g[5], REF = g[6];
  var nodes = Array.prototype.slice.call(svg.querySelectorAll("[data-key]"));
  var edges = Array.prototype.slice.call(svg.querySelectorAll("path[data-from]"));
  var byKey = {};
  nodes.forEach(function (n) { byKey[n.getAttribute("data-key")] = n; n._t = n.getAttribute("transform"); });
  edges.forEach(function (e) { e._d = e.getAttribute("d"); });
  var full = { box: svg.getAttribute("viewBox"), w: +svg.getAttribute("width"), h: +svg.getAttribute("height") };
  var size = { w: full.w, h: full.h }, scale = 1;

  function zoom(to) {
    scale = Math.max(0.05, Math.min(2.5, to));
    svg.style.width = size.w * scale + "px";
    svg.style.height = size.h * scale + "px";
  }
  // never so small that labels can't be read: on a phone the box pans sideways instead
  function fitWidth() { zoom(Math.max(0.7, Math.min(1, (wrap.clientWidth - 2) / size.w))); }
  function fitAll() {
    zoom(Math.min(1, (wrap.clientWidth - 2) / size.w, (parseFloat(getComputedStyle(wrap).maxHeight) - 2) / size.h));
  }
  document.querySelectorAll("[data-zoom]").forEach(function (button) {
    button.addEventListener("click", function () {
      var how = button.getAttribute("data-zoom");
      if (how === "fit") fitAll(); else zoom(scale * (how === "in" ? 1.25 : 0.8));
    });
  });
  wrap.addEventListener("wheel", function (event) {
    if (!event.ctrlKey) return;  // a plain wheel scrolls (pans) the box
    event.preventDefault();
    zoom(scale * (event.deltaY < 0 ? 1.1 : 0.9));
  }, { passive: false });
  var drag = null;
  wrap.addEventListener("pointerdown", function (event) {
    if (event.pointerType !== "mouse" || event.button !== 0 || event.target.closest("a")) return;
    drag = { x: event.clientX, y: event.clientY, left: wrap.scrollLeft, top: wrap.scrollTop };
    wrap.classList.add("dragging");
  });
  window.addEventListener("pointermove", function (event) {
    if (!drag) return;
    wrap.scrollLeft = drag.left - (event.clientX - drag.x);
    wrap.scrollTop = drag.top - (event.clientY - drag.y);
  });
  window.addEventListener("pointerup", function () { drag = null; wrap.classList.remove("dragging"); });

  nodes.forEach(function (node) {
    var key = node.getAttribute("data-key");
    node.addEventListener("pointerenter", function () {
      svg.classList.add("hl");
      edges.forEach(function (e) {
        e.classList.toggle("on", e.getAttribute("data-from") === key || e.getAttribute("data-to") === key);
      });
    });
    node.addEventListener("pointerleave", function () { svg.classList.remove("hl"); });
  });

  function show(node, on) { (node.parentNode.tagName.toLowerCase() === "a" ? node.parentNode : node).style.display = on ? "" : "none"; }
  function flow(a, b) {
    var x1 = a[0] + W, y1 = a[1] + H / 2, x2 = b[0], y2 = b[1] + H / 2, mid = (x1 + x2) / 2;
    return "M" + x1 + "," + y1 + " C" + mid + "," + y1 + " " + mid + "," + y2 + " " + (x2 - 6) + "," + y2;
  }
  function arc(a, b) {  // as lineage.reference_path
    var right = a[0] + W, y1 = a[1] + H / 2 - 6, y2 = b[1] + H / 2 + 6;
    var bulge = right + 18 + Math.min(Math.abs(y2 - y1) / STEP, 8) * 10;
    return "M" + right + "," + y1 + " C" + bulge + "," + y1 + " " + bulge + "," + y2 + " " + (right + 6) + "," + y2;
  }
  // The same layout as lineage.layout, for the focused table, its feed, folder and the tables
  // its relationships tests connect it to.
  function focus(key) {
    if (!byKey[key]) {
      nodes.forEach(function (n) { show(n, true); n.setAttribute("transform", n._t); });
      edges.forEach(function (e) { e.style.display = ""; e.setAttribute("d", e._d); });
      svg.setAttribute("viewBox", full.box);
      size = { w: full.w, h: full.h };
      return;
    }
    var keep = {}; keep[key] = true;
    var upstream = [key];
    while (upstream.length) {
      var k = upstream.pop();
      edges.forEach(function (e) {
        var from = e.getAttribute("data-from"), to = e.getAttribute("data-to");
        if (e.classList.contains("lineage-edge") && to === k && !keep[from]) { keep[from] = true; upstream.push(from); }
        if (k === key && e.classList.contains("lineage-ref") && (from === key || to === key)) { keep[from] = keep[to] = true; }
      });
    }
    var at = {}, rows = { 1: 0, 2: 1 };
    var shown = nodes.filter(function (n) { return keep[n.getAttribute("data-key")]; });
    at[key] = [LEFT + 2 * COL, TOP];
    shown.forEach(function (n) {
      var k = n.getAttribute("data-key"), col = +n.getAttribute("data-col");
      if (col > 0 && k !== key) at[k] = [LEFT + col * COL, TOP + rows[col]++ * STEP];
    });
    var floor = TOP;
    shown.forEach(function (n) {
      var k = n.getAttribute("data-key");
      if (+n.getAttribute("data-col") !== 0) return;
      var ys = edges.filter(function (e) { return e.getAttribute("data-from") === k && at[e.getAttribute("data-to")]; })
        .map(function (e) { return at[e.getAttribute("data-to")][1]; });
      var y = Math.max(floor, ys.length ? Math.min.apply(null, ys) : floor);
      at[k] = [LEFT, y];
      floor = y + STEP;
    });
    nodes.forEach(function (n) {
      var p = at[n.getAttribute("data-key")];
      show(n, !!p);
      if (p) n.setAttribute("transform", "translate(" + p[0] + "," + p[1] + ")");
    });
    var refs = false;
    edges.forEach(function (e) {
      var a = at[e.getAttribute("data-from")], b = at[e.getAttribute("data-to")];
      var on = !!(a && b) && (e.classList.contains("lineage-edge") || e.getAttribute("data-from") === key || e.getAttribute("data-to") === key);
      e.style.display = on ? "" : "none";
      if (!on) return;
      if (e.classList.contains("lineage-ref")) { refs = true; e.setAttribute("d", arc(a, b)); } else e.setAttribute("d", flow(a, b));
    });
    var h = 0;
    Object.keys(at).forEach(function (k) { h = Math.max(h, at[k][1]); });
    size = { w: LEFT * 2 + 3 * W + 2 * g[2] + (refs ? REF : 0), h: h + H + 8 };
    svg.setAttribute("viewBox", "0 0 " + size.w + " " + size.h);
  }
  function start() {  // a box narrower than the graph opens on the whole Delta table column
    fitWidth();
    wrap.scrollTop = 0;
    wrap.scrollLeft = Math.max(0, (LEFT + 2 * COL + W + 12) * scale - wrap.clientWidth);
  }
  var select = document.getElementById("lineage-focus");
  function fromHash() {
    var m = /^#focus=(.+)$/.exec(location.hash);
    var key = m ? "delta:" + decodeURIComponent(m[1]) : "";
    if (select) select.value = byKey[key] ? key : "";
    focus(key);
    start();
  }
  if (select) {
    select.addEventListener("change", function () {
      var id = select.value.replace(/^delta:/, "");
      history.replaceState(null, "", id ? "#focus=" + encodeURIComponent(id) : location.pathname);
      focus(select.value);
      start();
    });
  }
  window.addEventListener("hashchange", fromHash);
  // until the reader pans or zooms, a resized window (a phone turned, a window that gets its
  // size after the first paint) opens the graph again
  var untouched = true;
  ["pointerdown", "wheel", "keydown"].forEach(function (name) {
    wrap.addEventListener(name, function () { untouched = false; });
  });
  document.querySelectorAll("[data-zoom]").forEach(function (b) {
    b.addEventListener("click", function () { untouched = false; });
  });
  window.addEventListener("resize", function () { if (untouched) start(); });
  fromHash();
})();
