(function () {
  "use strict";
  var started = performance.now();
  var block = document.getElementById("npuprof-data");
  if (block) { heatmap(JSON.parse(block.textContent)); }
  var root = document.documentElement;
  root.setAttribute("data-render-ms", (performance.now() - started).toFixed(1));
  root.setAttribute("data-rendered", "1");

  function heatmap(d) {
    var L = d.layout, rows = d.rows.length, cols = d.cols;
    var canvas = document.getElementById("heatmap");
    var dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(L.w * dpr); canvas.height = Math.round(L.h * dpr);
    canvas.style.width = L.w + "px"; canvas.style.height = L.h + "px";
    var ctx = canvas.getContext("2d");
    ctx.scale(dpr, dpr);
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, L.w, L.h);
    var lut = new Uint8ClampedArray(256 * 3), n = d.colours.length;
    lut.set(d.noData, 0);
    for (var q = 1; q < 256; q++) {
      var t = (q - 1) / 254 * (n - 1), i = Math.min(Math.floor(t), n - 2), f = t - i;
      for (var c = 0; c < 3; c++) { lut[q * 3 + c] = d.colours[i][c] * (1 - f) + d.colours[i + 1][c] * f; }
    }
    var bin = atob(d.cells), cells = new Uint8Array(bin.length);
    var image = ctx.createImageData(cols, rows), px = image.data, filled = 0;
    for (var k = 0; k < bin.length; k++) {
      var v = bin.charCodeAt(k); cells[k] = v; if (v) { filled++; }
      var o = k * 4, l = v * 3;
      px[o] = lut[l]; px[o + 1] = lut[l + 1]; px[o + 2] = lut[l + 2]; px[o + 3] = 255;
    }
    var off = document.createElement("canvas");
    off.width = cols; off.height = rows;
    off.getContext("2d").putImageData(image, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(off, L.ml, L.mt, L.pw, L.ph);
    ctx.strokeStyle = "#b9c0ca"; ctx.lineWidth = 1;
    ctx.strokeRect(L.ml - 0.5, L.mt - 0.5, L.pw + 1, L.ph + 1);
    var span = cols * d.k;
    function x(step) { return L.ml + (step - d.first) / span * L.pw; }
    var slow = {};
    d.slow.forEach(function (r) { slow[r] = true; });
    // the rows' labels, the slow ranks' in red with a marker
    ctx.font = "12px system-ui, sans-serif"; ctx.textAlign = "right"; ctx.textBaseline = "middle";
    ctx.fillStyle = "#4a5563";
    d.rowTicks.forEach(function (r) { ctx.fillText(d.rows[r], L.ml - 8, L.mt + (r + 0.5) * L.rh); });
    ctx.font = "bold 12px system-ui, sans-serif"; ctx.fillStyle = d.slowColour;
    d.slow.forEach(function (r) {
      var y = L.mt + (r + 0.5) * L.rh;
      ctx.fillText(d.rows[r], L.ml - 14, y);
      ctx.beginPath(); ctx.moveTo(L.ml - 11, y - 5); ctx.lineTo(L.ml - 2, y); ctx.lineTo(L.ml - 11, y + 5); ctx.fill();
      if (L.rh >= 6) {
        ctx.strokeStyle = d.slowColour; ctx.lineWidth = 1.5;
        ctx.strokeRect(L.ml - 0.5, L.mt + r * L.rh - 0.5, L.pw + 1, L.rh + 1);
      } else {  // a thin row: marks beside it, none over it
        ctx.fillRect(L.ml + L.pw + 1, y - 0.5, L.gap - 2, 1);
      }
    });
    // the steps' axis
    ctx.font = "12px system-ui, sans-serif"; ctx.fillStyle = "#4a5563"; ctx.textAlign = "center";
    ctx.textBaseline = "top"; ctx.strokeStyle = "#8a94a3";
    var bottom = L.mt + L.ph, half = L.pw / span / 2;
    d.stepTicks.forEach(function (s) {
      var xx = x(s) + half;
      ctx.beginPath(); ctx.moveTo(xx, bottom); ctx.lineTo(xx, bottom + 5); ctx.stroke();
      ctx.fillText(s.toLocaleString("en-US"), xx, bottom + 8);
    });
    ctx.fillStyle = "#1d2330"; ctx.font = "13px system-ui, sans-serif";
    ctx.fillText("step (the job's step numbers" + (d.downsampled ? "; each column: the slowest of its " +
      d.k.toLocaleString("en-US") + " steps)" : ")"), L.ml + L.pw / 2, bottom + 26);
    // the windows: a strip above the map, an outline on the rows that recorded them
    ctx.textAlign = "right"; ctx.textBaseline = "middle"; ctx.fillStyle = "#5f6b7a";
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillText("windows", L.ml - 8, L.mt - 11); ctx.fillText("spikes", L.ml - 8, L.mt - 30);
    var labelled = {}, labelEnd = -1;
    d.windows.forEach(function (w) {
      var x0 = x(w[2]), x1 = Math.max(x(w[3] + 1), x0 + 3), name = w[2] === w[3] ? "" + w[2] : w[2] + "-" + w[3];
      if (!labelled[name] && x0 > labelEnd) {
        labelled[name] = true;
        ctx.font = "bold 11px system-ui, sans-serif"; ctx.textAlign = "left"; ctx.fillStyle = d.windowColour;
        ctx.fillText(name, x1 + 4, L.mt - 11);
        labelEnd = x1 + 10 + ctx.measureText(name).width;
      }
      ctx.fillStyle = d.windowColour; ctx.globalAlpha = w[4] ? 1 : 0.5;
      ctx.fillRect(x0, L.mt - 15, x1 - x0, 8); ctx.globalAlpha = 1;
      ctx.strokeStyle = d.windowColour; ctx.lineWidth = 2; ctx.setLineDash(w[4] ? [] : [4, 3]);
      ctx.strokeRect(x0 - 1, L.mt + w[0] * L.rh - 1, x1 - x0 + 2, (w[1] - w[0] + 1) * L.rh + 2);
      ctx.setLineDash([]);
    });
    // the spikes: a marker above their column, labelled
    ctx.textAlign = "left"; ctx.textBaseline = "alphabetic"; ctx.font = "bold 12px system-ui, sans-serif";
    var taken = [];
    d.spikes.forEach(function (s) {
      var xx = x(s[0]) + half;
      ctx.fillStyle = d.spikeColour;
      ctx.beginPath(); ctx.moveTo(xx - 6, L.mt - 36); ctx.lineTo(xx + 6, L.mt - 36); ctx.lineTo(xx, L.mt - 25);
      ctx.fill();
      var text = "step " + s[0].toLocaleString("en-US") + ": " + s[1].toFixed(1) + "x" +
        (s[2] ? " (" + s[2] + ")" : "");
      var w = ctx.measureText(text).width, tx = Math.min(xx + 8, L.ml + L.pw - w), line = 0;
      while (taken.some(function (t) { return t[2] === line && tx < t[1] && tx + w > t[0]; })) { line++; }
      taken.push([tx, tx + w + 8, line]);
      ctx.fillStyle = "#b35806"; ctx.fillText(text, tx, L.mt - 40 - line * 14);
    });
    // each row's median, aligned with its row
    var mx = L.ml + L.pw + L.gap, top = 0;
    d.medians.forEach(function (m) { if (m && m > top) { top = m; } });
    if (top > 0) {
      d.medians.forEach(function (m, r) {
        if (!m) { return; }
        ctx.fillStyle = slow[r] ? d.slowColour : "#8a99a8";
        ctx.fillRect(mx, L.mt + r * L.rh + (L.rh > 3 ? 1 : 0), m / top * L.mw, Math.max(1, L.rh - (L.rh > 3 ? 2 : 0)));
      });
      if (d.jobMedian) {
        var jm = mx + d.jobMedian / top * L.mw;
        ctx.strokeStyle = "#1d2330"; ctx.setLineDash([4, 3]); ctx.lineWidth = 1;
        ctx.beginPath(); ctx.moveTo(jm, L.mt); ctx.lineTo(jm, bottom); ctx.stroke(); ctx.setLineDash([]);
      }
      ctx.fillStyle = "#1d2330"; ctx.font = "12px system-ui, sans-serif"; ctx.textAlign = "left";
      ctx.fillText("median step (ms)", mx, L.mt - 26);
      ctx.fillStyle = "#4a5563"; ctx.fillText("0", mx, L.mt - 8);
      ctx.textAlign = "right"; ctx.fillText(fmt(top), mx + L.mw, L.mt - 8);
    }
    // the colour scale
    var ly = bottom + 66, lw = 360, lx = L.ml;
    ctx.textAlign = "left"; ctx.textBaseline = "alphabetic"; ctx.fillStyle = "#1d2330";
    ctx.font = "13px system-ui, sans-serif";
    ctx.fillText("step time (ms, log scale" + (d.downsampled ? ", the slowest step of each column)" : ")"), lx, ly - 6);
    for (var p = 0; p < lw; p++) {
      var qq = 1 + Math.round(p / (lw - 1) * 254);
      ctx.fillStyle = "rgb(" + lut[qq * 3] + "," + lut[qq * 3 + 1] + "," + lut[qq * 3 + 2] + ")";
      ctx.fillRect(lx + p, ly, 1, 14);
    }
    ctx.strokeStyle = "#8a94a3"; ctx.strokeRect(lx - 0.5, ly - 0.5, lw + 1, 15);
    ctx.fillStyle = "#4a5563"; ctx.font = "12px system-ui, sans-serif"; ctx.textAlign = "center";
    ctx.textBaseline = "top";
    d.scaleTicks.forEach(function (t) {
      var xx = lx + t[0] * lw;
      ctx.beginPath(); ctx.moveTo(xx, ly + 14); ctx.lineTo(xx, ly + 19); ctx.stroke();
      ctx.textAlign = t[0] === 0 ? "left" : t[0] === 1 ? "right" : "center";
      ctx.fillText(t[1], xx, ly + 21);
    });
    var kx = lx + lw + 30;
    ctx.textAlign = "left"; ctx.textBaseline = "middle";
    ctx.fillStyle = "rgb(" + d.noData.join(",") + ")"; ctx.fillRect(kx, ly, 14, 14);
    ctx.strokeRect(kx - 0.5, ly - 0.5, 15, 15);
    ctx.fillStyle = "#1d2330"; ctx.fillText("no step recorded", kx + 20, ly + 7);
    kx += 140; ctx.strokeStyle = d.windowColour; ctx.lineWidth = 2; ctx.strokeRect(kx, ly + 1, 14, 12);
    ctx.fillText("profiled window", kx + 20, ly + 7);
    kx += 130; ctx.fillStyle = d.spikeColour;
    ctx.beginPath(); ctx.moveTo(kx, ly + 2); ctx.lineTo(kx + 12, ly + 2); ctx.lineTo(kx + 6, ly + 12); ctx.fill();
    ctx.fillStyle = "#1d2330"; ctx.fillText("spike", kx + 18, ly + 7);
    kx += 70; ctx.fillStyle = d.slowColour;
    ctx.beginPath(); ctx.moveTo(kx, ly + 2); ctx.lineTo(kx + 9, ly + 7); ctx.lineTo(kx, ly + 12); ctx.fill();
    ctx.fillText("slow rank", kx + 16, ly + 7);
    kx += 100; ctx.strokeStyle = "#1d2330"; ctx.setLineDash([4, 3]); ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(kx, ly + 7); ctx.lineTo(kx + 22, ly + 7); ctx.stroke(); ctx.setLineDash([]);
    ctx.fillStyle = "#1d2330"; ctx.fillText("job median (right)", kx + 28, ly + 7);
    canvas.setAttribute("data-cells", String(filled));
    canvas.setAttribute("data-rendered", "1");
    // hover: the values under the pointer
    var tip = document.getElementById("tip"), ratio = d.hi / d.lo;
    canvas.addEventListener("mousemove", function (e) {
      var box = canvas.getBoundingClientRect(), px0 = e.clientX - box.left, py = e.clientY - box.top;
      var r = Math.floor((py - L.mt) / L.rh), text = "";
      if (r >= 0 && r < rows && px0 >= L.ml && px0 < L.ml + L.pw) {
        var col = Math.floor((px0 - L.ml) / L.pw * cols), s0 = d.first + col * d.k;
        var s1 = Math.min(s0 + d.k - 1, d.last), v = cells[r * cols + col];
        var steps = s0 === s1 ? "step " + s0.toLocaleString("en-US") : "steps " + s0.toLocaleString("en-US") +
          "\u2013" + s1.toLocaleString("en-US");
        var about = v === 255 && d.clipHi ? "\u2265 " : v === 1 && d.clipLo ? "\u2264 " : "\u2248 ";
        text = d.rows[r] + ", " + steps + ": " + (v ? (d.k > 1 ? "slowest " : "") + about +
          fmt(d.lo * Math.pow(ratio, (v - 1) / 254)) + " ms" : "no step recorded");
      } else if (r >= 0 && r < rows && px0 >= mx && px0 <= mx + L.mw) {
        text = d.rows[r] + ": median " + (d.medians[r] ? fmt(d.medians[r]) + " ms" : "-") + (slow[r] ? " (slow)" : "");
      }
      if (!text) { tip.hidden = true; return; }
      tip.textContent = text; tip.hidden = false;
      tip.style.left = (canvas.offsetLeft + px0 + 14) + "px"; tip.style.top = (canvas.offsetTop + py + 12) + "px";
    });
    canvas.addEventListener("mouseleave", function () { tip.hidden = true; });
  }

  function fmt(ms) {
    if (ms >= 1000) { return Math.round(ms).toLocaleString("en-US"); }
    return ms >= 10 ? ms.toFixed(1) : ms.toFixed(2);
  }
})();
