/* protolab report: draws every chart as inline SVG from the JSON embedded in the page.
   No network, no libraries. Each chart element carries data-chart and data-expected-series;
   each drawn series is a <g data-series="…">. Errors go to a visible banner and to
   <html data-errors="N">. */
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"];
  var DASHES = ["none", "6 3", "2 2", "6 2 2 2"];  /* repeats of one configuration */
  var W = 660, H = 300, M = { top: 12, right: 12, bottom: 40, left: 58 };

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) { if (attrs.hasOwnProperty(k)) { e.setAttribute(k, attrs[k]); } }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function text(parent, x, y, s, attrs) {
    var t = el("text", attrs || {}, parent);
    t.setAttribute("x", x); t.setAttribute("y", y); t.textContent = s;
    return t;
  }
  function finite(v) { return typeof v === "number" && isFinite(v); }
  function fmt(v) {
    if (!finite(v)) { return "–"; }
    var a = Math.abs(v);
    if (a >= 1000) { return Math.round(v).toLocaleString("en"); }
    if (a >= 100) { return v.toFixed(0); }
    if (a >= 10) { return v.toFixed(1); }
    return v.toPrecision(3);
  }
  function values(chart) {
    var out = [];
    chart.series.forEach(function (s) {
      [s.values, s.low || [], s.high || []].forEach(function (arr) {
        arr.forEach(function (v) { if (finite(v)) { out.push(v); } });
      });
    });
    return out;
  }
  function linearScale(chart) {
    var vs = values(chart);
    var hi = Math.max.apply(null, vs.concat(chart.kind === "relative" || chart.kind === "ceiling" ? [100] : [1]));
    var step = Math.pow(10, Math.floor(Math.log10(hi / 5)));
    [1, 2, 5, 10].some(function (m) { if (hi / (step * m) <= 6) { step = step * m; return true; } return false; });
    var top = Math.ceil(hi * 1.05 / step) * step, ticks = [];
    for (var t = 0; t <= top + step / 2; t += step) { ticks.push(t); }
    return { y: function (v) { return M.top + (H - M.top - M.bottom) * (1 - v / top); }, ticks: ticks };
  }
  function logScale(chart) {
    var vs = values(chart).filter(function (v) { return v > 0; });
    var lo = Math.floor(Math.log10(Math.min.apply(null, vs.length ? vs : [1])));
    var hi = Math.ceil(Math.log10(Math.max.apply(null, vs.length ? vs : [10])));
    if (hi === lo) { hi = lo + 1; }
    var ticks = [];
    for (var e = lo; e <= hi; e++) { ticks.push(Math.pow(10, e)); }
    return {
      y: function (v) { return M.top + (H - M.top - M.bottom) * (1 - (Math.log10(v) - lo) / (hi - lo)); },
      ticks: ticks
    };
  }
  function axes(svg, chart, scale, xpos) {
    var g = el("g", { "class": "axes" }, svg);
    scale.ticks.forEach(function (t) {
      var y = scale.y(t);
      el("line", { x1: M.left, x2: W - M.right, y1: y, y2: y, "class": "grid" }, g);
      text(g, M.left - 6, y + 3, fmt(t), { "text-anchor": "end" });
    });
    var ylab = text(g, 0, 0, chart.ylabel, { "text-anchor": "middle", "class": "ylabel" });
    ylab.setAttribute("transform", "translate(12," + (M.top + (H - M.top - M.bottom) / 2) + ") rotate(-90)");
    var every = Math.max(1, Math.ceil(chart.x.length / 12));
    chart.x.forEach(function (label, i) {
      if (i % every === 0) { text(g, xpos(i), H - M.bottom + 16, label, { "text-anchor": "middle" }); }
    });
    el("line", { x1: M.left, x2: W - M.right, y1: H - M.bottom, y2: H - M.bottom, "class": "axis" }, g);
  }
  function bars(svg, chart, scale) {
    var n = Math.max(1, chart.series.length), groupW = (W - M.left - M.right) / Math.max(1, chart.x.length);
    var barW = groupW * 0.8 / n;
    function xpos(i) { return M.left + groupW * (i + 0.5); }
    axes(svg, chart, scale, xpos);
    var y0 = scale.y(0);
    chart.series.forEach(function (s, si) {
      var g = el("g", { "data-series": s.name, fill: PALETTE[si % PALETTE.length] }, svg);
      s.values.forEach(function (v, i) {
        if (!finite(v)) { return; }
        var x = M.left + groupW * i + groupW * 0.1 + barW * si, y = scale.y(v);
        var r = el("rect", { x: x + barW * 0.04, y: Math.min(y, y0), width: barW * 0.92,
                             height: Math.abs(y0 - y), "class": "bar" }, g);
        var tip = s.name + " at " + chart.x[i] + ": " + fmt(v);
        if (s.low && s.high && finite(s.low[i]) && finite(s.high[i])) {
          var cx = x + barW / 2, yl = scale.y(s.low[i]), yh = scale.y(s.high[i]);
          el("line", { x1: cx, x2: cx, y1: yl, y2: yh, "class": "whisker" }, g);
          el("line", { x1: cx - 3, x2: cx + 3, y1: yl, y2: yl, "class": "whisker" }, g);
          el("line", { x1: cx - 3, x2: cx + 3, y1: yh, y2: yh, "class": "whisker" }, g);
          tip += " (95 % CI " + fmt(s.low[i]) + "–" + fmt(s.high[i]) + ")";
        }
        el("title", {}, r).textContent = tip;
      });
    });
    var y100 = scale.y(100);
    el("line", { x1: M.left, x2: W - M.right, y1: y100, y2: y100, "class": "hundred" }, svg);
  }
  function lines(svg, chart, scale) {
    var n = chart.x.length, span = W - M.left - M.right;
    function xpos(i) { return M.left + (n > 1 ? span * i / (n - 1) : span / 2); }
    axes(svg, chart, scale, xpos);
    var groups = [], nth = {};
    chart.series.forEach(function (s, si) {
      var group = chart.kind === "series" ? s.name.replace(/ r\d+$/, "") : s.name;
      if (groups.indexOf(group) < 0) { groups.push(group); }
      nth[group] = (nth[group] || 0) + 1;
      var colour = PALETTE[groups.indexOf(group) % PALETTE.length];
      var g = el("g", { "data-series": s.name, stroke: colour, fill: colour,
                        "stroke-dasharray": DASHES[(nth[group] - 1) % DASHES.length] }, svg);
      var d = "", pen = false;
      s.values.forEach(function (v, i) {
        if (!finite(v) || (chart.logY && v <= 0)) { pen = false; return; }
        d += (pen ? "L" : "M") + xpos(i).toFixed(1) + "," + scale.y(v).toFixed(1);
        pen = true;
        if (chart.kind === "percentiles") {
          var c = el("circle", { cx: xpos(i), cy: scale.y(v), r: 2.5 }, g);
          el("title", {}, c).textContent = s.name + " " + chart.x[i] + ": " + fmt(v);
        }
      });
      el("path", { d: d, fill: "none", "class": "line" }, g);
    });
  }
  function legend(fig, chart) {
    var box = document.createElement("div");
    box.className = "legend";
    var names = [];
    chart.series.forEach(function (s) {
      var group = chart.kind === "series" ? s.name.replace(/ r\d+$/, "") : s.name;
      if (names.indexOf(group) < 0) { names.push(group); }
    });
    names.forEach(function (name, si) {
      var k = document.createElement("span");
      k.className = "key";
      var sw = document.createElement("i");
      sw.style.background = PALETTE[si % PALETTE.length];
      k.appendChild(sw);
      k.appendChild(document.createTextNode(name));
      box.appendChild(k);
    });
    if (chart.kind === "series") {
      var hint = document.createElement("span");
      hint.className = "key";
      hint.textContent = "(line style: repeat 1 solid, 2 dashed, 3 dotted)";
      box.appendChild(hint);
    }
    fig.appendChild(box);
  }
  function draw(fig, chart) {
    var svg = el("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img",
                          "aria-label": chart.title });
    fig.appendChild(svg);
    var scale = chart.logY ? logScale(chart) : linearScale(chart);
    if (chart.kind === "relative" || chart.kind === "ceiling") { bars(svg, chart, scale); }
    else { lines(svg, chart, scale); }
    legend(fig, chart);
    fig.setAttribute("data-drawn", String(chart.series.length));
  }
  window.protolabDrawAll = function () {
    var data = JSON.parse(document.getElementById("protolab-data").textContent);
    var byId = {};
    data.charts.forEach(function (c) { byId[c.id] = c; });
    var figs = document.querySelectorAll("[data-chart]");
    for (var i = 0; i < figs.length; i++) {
      var id = figs[i].getAttribute("data-chart");
      try {
        if (!byId[id]) { throw new Error("no data for chart " + id); }
        draw(figs[i], byId[id]);
      } catch (e) {
        window.protolabError("chart " + id + ": " + (e && e.message ? e.message : e));
      }
    }
    document.documentElement.setAttribute("data-charts-drawn", String(figs.length));
  };
  document.addEventListener("DOMContentLoaded", function () { window.protolabDrawAll(); });
})();
