// The explorer's front end (anywidget ES module, no build step): draws the scene on a <canvas>
// from frames the kernel precomputed, and writes the readout table beside it.
//
// THE WIRE FORMAT (traits scene, fast, groups, meta, v0..v5; messages ready, layer, now, set;
// every header field) is defined in ONE place: attnlib/widgets/framework/wire.py. It is parsed
// here in one place too: the traits in kernelSource() and render(), the messages in parseMessage().
// Three parts: a frame source (kernelSource: the kernel's messages; staticSource: a static
// page's frameAt(values), tools/site_assets/site.js), the frame player (makePlayer: paints once
// per animation frame, from the latest values only, stale frames dropped) and the painter
// (makePainter: redraws only the panels whose arrays or texts changed since the last paint).
// Each artist kind is drawn by its entry of ARTISTS (render.py's DRAW is the matplotlib twin).
// Test hooks: root.dataset.frames (frames painted), root.dataset.values (values of the last frame,
// JSON), root.__attnlib.snapshot() (the arrays and readout numbers last drawn).

function buf(b, Type) {
  const v = b instanceof DataView ? b : new DataView(b.buffer || b);
  const copy = v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength); // aligned
  return new Type(copy);
}

function offsets(arrays) {
  // {key: [offset, size, shape]} of arrays packed in sorted key order, and their total size
  let stride = 0;
  const offs = {};
  for (const k of Object.keys(arrays).sort()) {
    const n = arrays[k].reduce((a, b) => a * b, 1);
    offs[k] = [stride, n, arrays[k]];
    stride += n;
  }
  return [offs, stride];
}

function parseMessage(msg, buffers) {
  // The one parser of the kernel's messages (wire.py): "layer" -> {arrays: {key: {data, shape}}};
  // "now" / "set" -> the frame header plus its decoded buffers (frameAt reads one frame).
  const f32 = buf(buffers[0], Float32Array);
  const [offs, stride] = offsets(msg.arrays);
  if (msg.type === "layer") {
    const arrays = {};
    for (const [k, [o, n, shape]] of Object.entries(offs))
      arrays[k] = { data: f32.subarray(o, o + n), shape };
    return { token: msg.token, arrays };
  }
  const f64 = buf(buffers[1], Float64Array);
  let rstride = 0;
  for (const s of msg.readout) if (s.kind !== "s") rstride += s.shape.reduce((a, b) => a * b, 1);
  return { ...msg, f32, f64, stride, offs, rstride };
}

function frameAt(set, i, layer) {
  const arrays = layer ? { ...layer.arrays } : {};
  for (const [k, [o, n, shape]] of Object.entries(set.offs)) {
    arrays[k] = { data: set.f32.subarray(i * set.stride + o, i * set.stride + o + n), shape };
  }
  const nums = set.f64.subarray(i * set.rstride, (i + 1) * set.rstride);
  const texts = {};
  set.texts.forEach((k, j) => {
    texts[k] = set.text_values[i][j];
  });
  return { arrays, nums, strings: set.strings.length ? set.strings[i] : [], texts };
}

function fmt(x, kind, digits) {
  if (kind === "b") return x ? "True" : "False";
  if (kind === "i") return String(Math.round(x));
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  const s = x.toFixed(digits);
  return Number(s) === 0 ? (0).toFixed(digits) : s;
}

function esc(s) {
  return String(s)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#x27;");
}

function readoutParts(spec, fr, columns, digits) {
  // [the table's HTML with empty cells, the text of each cell in order]
  const head = columns
    ? `<tr><th></th>${columns.map((c) => `<th>${esc(c)}</th>`).join("")}</tr>`
    : "";
  const texts = [];
  let body = "",
    p = 0,
    q = 0;
  for (const s of spec) {
    if (s.kind === "s") {
      body += `<tr><th>${esc(s.name ?? s.label)}</th><td></td></tr>`;
      texts.push(String(fr.strings[q++]));
      continue;
    }
    const rows = s.shape.length === 2 ? s.shape[0] : 1,
      cols = s.shape.length ? s.shape[s.shape.length - 1] : 1;
    for (let r = 0; r < rows; r++) {
      body += `<tr><th>${r === 0 ? esc(s.name ?? s.label) : ""}</th>${"<td></td>".repeat(cols)}</tr>`;
      for (let c = 0; c < cols; c++) texts.push(fmt(fr.nums[p++], s.kind, digits));
    }
  }
  return [`<table class='attnlib-table'>${head}${body}</table>`, texts];
}

// Caches of what is parsed or drawn once, keyed by the scene's own objects (never written into
// them: the scene is the model's trait value, shared by every view of it).
const FIELDS = new WeakMap(); // static field -> {data: Float64Array, shape}
const LUTS = new WeakMap(); // colour map ("#rrggbb" x 256) -> RGBA bytes
const IMAGES = new WeakMap(); // heatmap artist -> {image: canvas, pixels: ImageData}

function get(field, fr) {
  // {data, shape} for a static or dynamic numeric field, or null
  if (!field) return null;
  if (field.key !== undefined) return fr ? fr.arrays[field.key] : null;
  let f = FIELDS.get(field);
  if (!f) {
    f = { data: Float64Array.from(field.data), shape: field.shape };
    FIELDS.set(field, f);
  }
  return f;
}

function hatchPattern(ctx, fill) {
  const c = document.createElement("canvas");
  c.width = c.height = 8;
  const g = c.getContext("2d");
  g.fillStyle = fill;
  g.fillRect(0, 0, 8, 8);
  g.strokeStyle = "#737373";
  g.lineWidth = 1;
  g.beginPath();
  g.moveTo(0, 8);
  g.lineTo(8, 0);
  g.moveTo(-4, 4);
  g.lineTo(4, -4);
  g.moveTo(4, 12);
  g.lineTo(12, 4);
  g.stroke();
  return ctx.createPattern(c, "repeat");
}

function panelMap(p, rect) {
  const [l, t, w, h] = rect || p.rect,
    [x0, x1] = p.xlim,
    [y0, y1] = p.ylim;
  return {
    sx: (x) => l + ((x - x0) / (x1 - x0)) * w,
    sy: (y) => t + ((y1 - y) / (y1 - y0)) * h,
    l,
    t,
    w,
    h,
  };
}

function marker(ctx, kind, x, y, r) {
  ctx.beginPath();
  if (kind === "s") ctx.rect(x - r, y - r, 2 * r, 2 * r);
  else if (kind === "^") {
    ctx.moveTo(x, y - r * 1.2);
    ctx.lineTo(x + r, y + r * 0.8);
    ctx.lineTo(x - r, y + r * 0.8);
    ctx.closePath();
  } else if (kind === "*") {
    for (let k = 0; k < 10; k++) {
      const a = -Math.PI / 2 + (k * Math.PI) / 5,
        rr = k % 2 ? r * 0.7 : r * 1.6;
      ctx.lineTo(x + rr * Math.cos(a), y + rr * Math.sin(a));
    }
    ctx.closePath();
  } else ctx.arc(x, y, r, 0, 2 * Math.PI);
}

function rgbLut(lut) {
  // "#rrggbb" x 256 -> packed RGBA bytes, parsed once per colour map
  let rgba = LUTS.get(lut);
  if (!rgba) {
    rgba = new Uint8Array(1024);
    lut.forEach((c, i) => {
      for (let b = 0; b < 3; b++) rgba[4 * i + b] = parseInt(c.slice(1 + 2 * b, 3 + 2 * b), 16);
      rgba[4 * i + 3] = 255;
    });
    LUTS.set(lut, rgba);
  }
  return rgba;
}

function rgbaOf(hex) {
  // "#rrggbbaa" (matplotlib's to_hex(keep_alpha=True)) -> [r, g, b, a] bytes
  return [0, 1, 2, 3].map((b) => parseInt(hex.slice(1 + 2 * b, 3 + 2 * b), 16));
}

function drawHeatmap(ctx, a, m, fr, scene, hatch) {
  // The cells as one image (a pixel a cell) scaled up with no smoothing, then the hidden cells
  // hatched in one fill, then the annotations: the pixels of one fillRect a cell, far cheaper.
  const v = get(a.values, fr),
    hid = get(a.hidden, fr);
  if (!v) return;
  const [n, k] = v.shape,
    lut = rgbLut(scene.luts[a.cmap]),
    // a NaN cell: the colour map's "bad" colour, as matplotlib's imshow draws it (by default
    // transparent: the panel's background shows)
    bad = rgbaOf(scene.bad?.[a.cmap] || "#00000000");
  let img = IMAGES.get(a);
  if (!img || img.image.width !== k || img.image.height !== n) {
    img = { image: document.createElement("canvas"), pixels: new ImageData(k, n) };
    img.image.width = k;
    img.image.height = n;
    IMAGES.set(a, img);
  }
  // screen x grows with j unless xlim runs backwards; row i sits at the top when ylim is inverted
  const flipX = m.sx(1) < m.sx(0),
    flipY = m.sy(1) < m.sy(0);
  const px = img.pixels.data,
    t = (val) => Math.min(1, Math.max(0, (val - a.vmin) / (a.vmax - a.vmin)));
  let anyHidden = false;
  for (let i = 0; i < n; i++)
    for (let j = 0; j < k; j++) {
      const o = 4 * ((flipY ? n - 1 - i : i) * k + (flipX ? k - 1 - j : j));
      if (hid && hid.data[i * k + j] > 0.5) {
        px[o + 3] = 0; // left to the hatch
        anyHidden = true;
        continue;
      }
      const val = v.data[i * k + j];
      if (Number.isNaN(val)) {
        for (let b = 0; b < 4; b++) px[o + b] = bad[b];
        continue;
      }
      const c = 4 * Math.min(255, Math.floor(t(val) * 256));
      px[o] = lut[c];
      px[o + 1] = lut[c + 1];
      px[o + 2] = lut[c + 2];
      px[o + 3] = 255;
    }
  img.image.getContext("2d").putImageData(img.pixels, 0, 0);
  const x0 = m.sx(-0.5),
    x1 = m.sx(k - 0.5),
    y0 = m.sy(-0.5),
    y1 = m.sy(n - 0.5);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(
    img.image,
    Math.min(x0, x1),
    Math.min(y0, y1),
    Math.abs(x1 - x0),
    Math.abs(y1 - y0),
  );
  const cell = (i, j) => {
    const cx0 = m.sx(j - 0.5),
      cx1 = m.sx(j + 0.5),
      cy0 = m.sy(i - 0.5),
      cy1 = m.sy(i + 0.5);
    return [Math.min(cx0, cx1), Math.min(cy0, cy1), Math.abs(cx1 - cx0), Math.abs(cy1 - cy0)];
  };
  if (anyHidden) {
    ctx.beginPath();
    for (let i = 0; i < n; i++)
      for (let j = 0; j < k; j++)
        if (hid.data[i * k + j] > 0.5) {
          const [x, y, w, h] = cell(i, j);
          ctx.rect(x, y, w + 0.5, h + 0.5);
        }
    ctx.fillStyle = hatch;
    ctx.fill();
  }
  if (!a.annotate) return;
  ctx.font = `10px ${m.font}`;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (let i = 0; i < n; i++)
    for (let j = 0; j < k; j++) {
      if (hid && hid.data[i * k + j] > 0.5) continue;
      const val = v.data[i * k + j],
        [x, y, w, h] = cell(i, j);
      ctx.fillStyle = t(val) > 0.55 ? "#000" : "#fff";
      ctx.fillText(fmt(val, "f", a.digits), x + w / 2, y + h / 2); // fmt: no "-0.00"
    }
}

function drawBars(ctx, a, m, fr) {
  const hts = get(a.heights, fr),
    xs = get(a.x, fr);
  if (!hts) return;
  for (let i = 0; i < hts.data.length; i++) {
    const x = xs ? xs.data[i] : i,
      x0 = m.sx(x - a.width / 2),
      x1 = m.sx(x + a.width / 2);
    const y0 = m.sy(a.bottom),
      y1 = m.sy(a.bottom + hts.data[i]);
    ctx.fillStyle = a.colors ? a.colors[i % a.colors.length] : a.color;
    ctx.fillRect(Math.min(x0, x1), Math.min(y0, y1), Math.abs(x1 - x0), Math.abs(y1 - y0));
  }
}

function drawPoints(ctx, a, m, fr) {
  const xy = get(a.xy, fr);
  if (!xy) return;
  ctx.fillStyle = a.color;
  ctx.strokeStyle = a.color;
  ctx.lineWidth = 1.5;
  ctx.font = `11px ${m.font}`;
  for (let i = 0; i < xy.data.length / 2; i++) {
    const x = m.sx(xy.data[2 * i]),
      y = m.sy(xy.data[2 * i + 1]);
    marker(ctx, a.marker, x, y, a.size);
    if (a.filled) ctx.fill();
    else ctx.stroke();
    if (a.labels?.[i]) {
      ctx.textBaseline = "bottom";
      ctx.fillText(a.labels[i], x + a.size + 2, y - a.size - 2);
    }
  }
}

function tracePath(ctx, xy, m) {
  ctx.beginPath();
  for (let i = 0; i < xy.data.length / 2; i++)
    ctx.lineTo(m.sx(xy.data[2 * i]), m.sy(xy.data[2 * i + 1]));
}

function drawLine(ctx, a, m, fr) {
  const xy = get(a.xy, fr);
  if (!xy) return;
  tracePath(ctx, xy, m);
  ctx.strokeStyle = a.color;
  ctx.lineWidth = a.width;
  if (a.dash) ctx.setLineDash([5, 3]);
  ctx.stroke();
}

function drawPolygon(ctx, a, m, fr) {
  const xy = get(a.xy, fr);
  if (!xy) return;
  tracePath(ctx, xy, m);
  ctx.closePath();
  ctx.globalAlpha = a.alpha;
  ctx.fillStyle = a.color;
  ctx.fill();
  ctx.globalAlpha = 1;
  if (a.edge) {
    ctx.strokeStyle = a.edge;
    ctx.lineWidth = 1;
    ctx.stroke();
  }
}

function drawSegments(ctx, a, m, fr, head = 0) {
  const xy = get(a.xy, fr),
    ws = get(a.widths, fr);
  if (!xy) return;
  ctx.strokeStyle = a.color;
  ctx.fillStyle = a.color;
  for (let i = 0; i < xy.data.length / 4; i++) {
    const d = xy.data,
      x0 = m.sx(d[4 * i]),
      y0 = m.sy(d[4 * i + 1]),
      x1 = m.sx(d[4 * i + 2]),
      y1 = m.sy(d[4 * i + 3]);
    ctx.lineWidth = ws ? ws.data[i] : a.width;
    if (ctx.lineWidth <= 0) continue;
    const ang = Math.atan2(y1 - y0, x1 - x0);
    ctx.beginPath();
    ctx.moveTo(x0, y0);
    ctx.lineTo(x1 - head * 0.8 * Math.cos(ang), y1 - head * 0.8 * Math.sin(ang));
    ctx.stroke();
    if (head && Math.hypot(x1 - x0, y1 - y0) > 1) {
      ctx.beginPath();
      ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - head * Math.cos(ang - 0.4), y1 - head * Math.sin(ang - 0.4));
      ctx.lineTo(x1 - head * Math.cos(ang + 0.4), y1 - head * Math.sin(ang + 0.4));
      ctx.closePath();
      ctx.fill();
    }
  }
}

function drawText(ctx, a, m, fr) {
  const s = a.key ? (fr ? fr.texts[a.key] : "") : a.text;
  ctx.fillStyle = a.color;
  // m.minText: the smallest text of the layout (9 px in the narrow one, where every word must be
  // readable on a phone; 0 in the scene's own, which matches render_png)
  ctx.font = `${Math.max(a.size * 1.2, m.minText || 0)}px ${m.font}`;
  ctx.textAlign = a.ha;
  ctx.textBaseline = { center: "middle", middle: "middle" }[a.va] || a.va;
  const x = a.axes ? m.l + a.x * m.w : m.sx(a.x),
    y = a.axes ? m.t + (1 - a.y) * m.h : m.sy(a.y);
  ctx.fillText(s || "", x, y);
}

// One entry per artist kind of artists.py: fn(ctx, artist, panel map, frame, scene, hatch).
const ARTISTS = {
  heatmap: drawHeatmap,
  bars: drawBars,
  points: drawPoints,
  line: drawLine,
  polygon: drawPolygon,
  segments: (ctx, a, m, fr) => drawSegments(ctx, a, m, fr, 0),
  arrows: (ctx, a, m, fr) => drawSegments(ctx, a, m, fr, 8),
  text: drawText,
};

function drawArtist(ctx, a, m, fr, scene, hatch) {
  ctx.save();
  ARTISTS[a.kind](ctx, a, m, fr, scene, hatch);
  ctx.restore();
}

function drawAxes(ctx, p, m, scene) {
  ctx.save();
  ctx.fillStyle = "#fff";
  ctx.fillRect(m.l, m.t, m.w, m.h);
  ctx.strokeStyle = "#333";
  ctx.lineWidth = 0.8;
  ctx.strokeRect(m.l, m.t, m.w, m.h);
  ctx.fillStyle = "#222";
  ctx.font = `11px ${m.font}`;
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  p.xticks.forEach((t, i) => {
    const x = m.sx(t);
    ctx.beginPath();
    ctx.moveTo(x, m.t + m.h);
    ctx.lineTo(x, m.t + m.h + 4);
    ctx.stroke();
    ctx.fillText(p.xticklabels[i], x, m.t + m.h + 5);
  });
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  p.yticks.forEach((t, i) => {
    const y = m.sy(t);
    ctx.beginPath();
    ctx.moveTo(m.l - 4, y);
    ctx.lineTo(m.l, y);
    ctx.stroke();
    ctx.fillText(p.yticklabels[i], m.l - 6, y);
  });
  ctx.textAlign = "center";
  if (p.xlabel) {
    ctx.textBaseline = "bottom";
    ctx.fillText(p.xlabel, m.l + m.w / 2, m.t + m.h + (p.xticks.length ? 34 : 18));
  }
  if (p.title) {
    ctx.font = `12px ${m.font}`;
    ctx.textBaseline = "bottom";
    ctx.fillText(p.title, m.l + m.w / 2, m.t - 5);
  }
  if (p.ylabel) {
    const longest = Math.max(0, ...p.yticklabels.map((s) => s.length));
    ctx.translate(m.l - (p.yticks.length ? 8 + 6.5 * longest : 0) - 12, m.t + m.h / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.font = `11px ${m.font}`;
    ctx.textBaseline = "bottom";
    ctx.fillText(p.ylabel, 0, 0);
  }
  ctx.restore();
  for (const a of p.artists) {
    if (a.kind !== "heatmap" || !a.colorbar) continue;
    const lut = scene.luts[a.cmap],
      x = m.l + m.w + 8;
    for (let i = 0; i < 256; i++) {
      ctx.fillStyle = lut[i];
      ctx.fillRect(x, m.t + m.h * (1 - (i + 1) / 256), 10, m.h / 256 + 0.5);
    }
    ctx.fillStyle = "#222";
    ctx.font = `10px ${m.font}`;
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    [a.vmin, (a.vmin + a.vmax) / 2, a.vmax].forEach((v, i) => {
      ctx.fillText(String(+v.toFixed(2)), x + 13, m.t + m.h * (1 - i / 2));
    });
  }
}

function legendBox(ctx, p, m) {
  // [x, y, w, h] of the panel's legend (10px font), or null
  const items = p.artists.filter((a) => a.label);
  if (!p.legend || !items.length) return null;
  ctx.save();
  ctx.font = `10px ${m.font}`;
  const w = 26 + Math.max(...items.map((a) => ctx.measureText(a.label).width)),
    h = 14 * items.length + 6;
  ctx.restore();
  const x = p.legend.includes("right") ? m.l + m.w - w - 4 : m.l + 4,
    y = p.legend.includes("upper") ? m.t + 4 : m.t + m.h - h - 4;
  return [x, y, w, h];
}

function drawLegend(ctx, p, m) {
  const box = legendBox(ctx, p, m);
  if (!box) return;
  const [x, y, w, h] = box,
    items = p.artists.filter((a) => a.label);
  ctx.save();
  ctx.font = `10px ${m.font}`;
  ctx.fillStyle = "rgba(255,255,255,0.85)";
  ctx.fillRect(x, y, w, h);
  ctx.strokeStyle = "#ccc";
  ctx.strokeRect(x, y, w, h);
  items.forEach((a, i) => {
    const yy = y + 10 + 14 * i;
    ctx.fillStyle = a.color;
    ctx.strokeStyle = a.color;
    if (a.kind === "line") {
      ctx.lineWidth = a.width;
      ctx.beginPath();
      ctx.moveTo(x + 4, yy);
      ctx.lineTo(x + 18, yy);
      ctx.stroke();
    } else ctx.fillRect(x + 6, yy - 4, 8, 8);
    ctx.fillStyle = "#222";
    ctx.textBaseline = "middle";
    ctx.fillText(a.label, x + 22, yy);
  });
  ctx.restore();
}

function isDynamic(a) {
  return Object.values(a).some((f) => f && typeof f === "object" && f.key !== undefined) || !!a.key;
}

function inputsOf(artists, fr) {
  // what a panel's dynamic artists draw from: their arrays and texts in this frame
  const out = [];
  for (const a of artists) {
    for (const f of Object.values(a))
      if (f && typeof f === "object" && f.key !== undefined) out.push(fr.arrays[f.key]);
    if (a.key) out.push(fr.texts[a.key]);
  }
  return out;
}

function sameInputs(a, b) {
  if (!a || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i],
      y = b[i];
    if (x === y) continue;
    if (!x || !y || typeof x !== "object" || typeof y !== "object") return false;
    if (x.data.length !== y.data.length || String(x.shape) !== String(y.shape)) return false;
    for (let j = 0; j < x.data.length; j++) {
      const u = x.data[j],
        w = y.data[j];
      if (u !== w && !(Number.isNaN(u) && Number.isNaN(w))) return false;
    }
  }
  return true;
}

function regionsOf(ctx, panels, maps, dpr, width, height) {
  // Per panel, the device pixels its dynamic drawing may touch ([x, y, w, h]: its plot area and
  // its legend, rounded out), and the panels whose regions overlap its own (itself included)
  const rs = panels.map((p, k) => {
    const m = maps[k],
      box = legendBox(ctx, p, m) || [m.l, m.t, m.w, m.h];
    const x0 = Math.max(0, Math.floor((Math.min(m.l, box[0]) - 1) * dpr)),
      y0 = Math.max(0, Math.floor((Math.min(m.t, box[1]) - 1) * dpr)),
      x1 = Math.min(width, Math.ceil((Math.max(m.l + m.w, box[0] + box[2]) + 1) * dpr)),
      y1 = Math.min(height, Math.ceil((Math.max(m.t + m.h, box[1] + box[3]) + 1) * dpr));
    return [x0, y0, x1 - x0, y1 - y0];
  });
  const meets = (a, b) =>
    a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3];
  const linked = rs.map((_, k) => [k]);
  for (let grew = true; grew; ) {
    grew = false; // close over chains of overlaps
    for (const group of linked)
      for (let j = 0; j < rs.length; j++)
        if (!group.includes(j) && group.some((i) => meets(rs[i], rs[j]))) {
          group.push(j);
          grew = true;
        }
  }
  return [rs, linked];
}

function nearest(values, v) {
  let best = 0,
    d = Infinity;
  for (let i = 0; i < values.length; i++) {
    const e = Math.abs(values[i] - v);
    if (e < d) {
      d = e;
      best = i;
    }
  }
  return best;
}

// ---------------------------------------------------------------- the painter
// Draws one frame: the canvas (background once, then only the panels whose inputs changed) and
// the readout. It knows nothing of where frames come from. Follows devicePixelRatio changes
// (browser zoom, another monitor): the canvas is resized and the last frame drawn again, sharp.
// On a narrow screen (a phone) the panels reflow into one column, scene.narrow (Scene.narrow in
// scene.py: the same panels, each plot area laid out by the rule of Scene.rects), where the whole
// scene would otherwise be scaled below scene.narrow.below of its size; the readout then wraps
// below the picture.
const MIN_TEXT_PX = 9;

function layoutOf(scene, width) {
  const n = scene.narrow;
  return n && width > 0 && width < scene.width * n.below ? "narrow" : "wide";
}

// The words for a screen reader, in English: the fallback. The kernel sends them in the current
// language (the "words" trait, wire.py: name, described, label, list and title, the explorer's
// shown name); the site passes its page's.
const WORDS = {
  name: "{name} explorer: {panels}",
  described: "The numbers are in the table beside the picture.",
  label: "{name}. {described}",
  list: ", ",
};

function nameOf(scene, meta, words) {
  const panels = scene.panels.map((p) => p.title).filter(Boolean);
  return words.name
    .replace("{name}", words.title || meta.builder || "")
    .replace("{panels}", panels.join(words.list))
    .trim();
}

// The readout as one sentence ("weights: 0.75, 0.25; nan: 0"), numbers as the table shows them.
function describe(spec, texts) {
  const parts = [];
  let i = 0;
  for (const s of spec) {
    const n = s.kind === "s" ? 1 : s.shape.reduce((a, b) => a * b, 1);
    parts.push(`${s.name ?? s.label}: ${texts.slice(i, i + n).join(", ")}`);
    i += n;
  }
  return parts.join("; ");
}

// ipywidgets' sliders (noUiSlider) give their handle role="slider" but no name (WCAG 4.1.2): in
// JupyterLab each handle of this explorer is named by its slider's own label.
function nameSliders(root) {
  const box = root.closest(".attnlib-explorer");
  if (!box) return;
  for (const s of box.querySelectorAll(".widget-slider")) {
    const h = s.querySelector(".noUi-handle:not([aria-label])"),
      label = s.querySelector(".widget-label")?.textContent.trim();
    if (h && label) h.setAttribute("aria-label", label);
  }
}

const SETTLE_MS = 400; // announce once the picture has stopped changing this long (not per frame)
const HIDDEN =
  "position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0";

function makePainter(root, scene, meta, words = WORDS) {
  const canvas = document.createElement("canvas");
  // a picture with words (WCAG 1.1.1): its name says what it shows; the live region below says
  // what it shows now, politely, once per settled change
  canvas.setAttribute("role", "img");
  const label = words.label.replace("{described}", words.described);
  canvas.setAttribute("aria-label", label.replace("{name}", nameOf(scene, meta, words)));
  const live = document.createElement("div");
  live.className = "attnlib-live";
  live.setAttribute("aria-live", "polite");
  live.setAttribute("aria-atomic", "true");
  live.style.cssText = HIDDEN;
  const readout = document.createElement("div");
  readout.className = "attnlib-readout";
  readout.style.cssText = "font-size:11px;line-height:1.25;max-width:100%";
  root.append(canvas, readout, live);
  let settle = null,
    spoken = null;
  // the readout's table rules come from the view's CSS (view.py)
  const ctx = canvas.getContext("2d"),
    dynamic = scene.panels.map((p) => p.artists.filter(isDynamic));
  const shown = { html: null, cells: [], texts: [] }; // the readout's table and cell texts
  let dpr, bg, hatch, maps, regions, linked, drawnInputs, last;
  let layout = layoutOf(scene, root.parentElement?.clientWidth || 0);

  function setup() {
    // canvas, background (axes, ticks, static artists) and regions at the current pixel ratio
    // and layout
    dpr = window.devicePixelRatio || 1;
    const box = layout === "narrow" ? scene.narrow : scene;
    maps = scene.panels.map((p, k) => ({
      ...panelMap(p, layout === "narrow" ? box.rects[k] : p.rect),
      minText: layout === "narrow" ? MIN_TEXT_PX : 0,
      font: scene.font || "sans-serif", // the language's font stack (Scene.to_json)
    }));
    root.dataset.layout = layout;
    canvas.style.width = `${box.width}px`;
    canvas.style.height = `${box.height}px`;
    canvas.width = Math.round(box.width * dpr);
    canvas.height = Math.round(box.height * dpr);
    hatch = hatchPattern(ctx, scene.hatch);
    bg = document.createElement("canvas");
    bg.width = canvas.width;
    bg.height = canvas.height;
    const bctx = bg.getContext("2d");
    bctx.scale(dpr, dpr);
    bctx.fillStyle = "#fff";
    bctx.fillRect(0, 0, box.width, box.height);
    scene.panels.forEach((p, k) => {
      drawAxes(bctx, p, maps[k], scene);
      bctx.save();
      bctx.beginPath();
      bctx.rect(maps[k].l, maps[k].t, maps[k].w, maps[k].h);
      bctx.clip();
      for (const a of p.artists)
        if (!isDynamic(a)) drawArtist(bctx, a, maps[k], null, scene, hatch);
      bctx.restore();
    });
    [regions, linked] = regionsOf(ctx, scene.panels, maps, dpr, canvas.width, canvas.height);
    drawnInputs = scene.panels.map(() => null); // per panel: the inputs it was last drawn from
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(bg, 0, 0);
  }

  function paint(fr, values, spec) {
    // Only the panels whose inputs changed since the last paint are drawn again, over the
    // background copied back into their regions. The readout's table is rebuilt only when its
    // rows change; otherwise only the cells whose text changed are rewritten.
    const inputs = dynamic.map((artists) => inputsOf(artists, fr));
    const dirty = new Set();
    inputs.forEach((inp, k) => {
      if (!sameInputs(drawnInputs[k], inp)) for (const j of linked[k]) dirty.add(j);
    });
    const redraw = [...dirty].sort((a, b) => a - b);
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    for (const k of redraw) {
      const [x, y, w, h] = regions[k];
      ctx.drawImage(bg, x, y, w, h, x, y, w, h);
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    for (const k of redraw) {
      ctx.save();
      ctx.beginPath();
      ctx.rect(maps[k].l, maps[k].t, maps[k].w, maps[k].h);
      ctx.clip();
      for (const a of dynamic[k]) drawArtist(ctx, a, maps[k], fr, scene, hatch);
      ctx.restore();
      drawLegend(ctx, scene.panels[k], maps[k]);
      drawnInputs[k] = inputs[k];
    }
    const [html, texts] = readoutParts(spec, fr, meta.columns, meta.digits);
    if (html !== shown.html) {
      readout.innerHTML = html;
      shown.cells = readout.querySelectorAll("td");
      shown.html = html;
      shown.texts = [];
    }
    texts.forEach((t, i) => {
      if (t !== shown.texts[i]) shown.cells[i].textContent = t; // only the cells that changed
    });
    shown.texts = texts;
    last = { fr, values, spec };
    // the text is built only when the moves have settled: drawing never waits on it
    clearTimeout(settle);
    settle = setTimeout(() => {
      const text = describe(last.spec, shown.texts);
      if (text !== spoken) live.textContent = spoken = text;
      nameSliders(root);
    }, SETTLE_MS);
  }

  let mq = null,
    observer = null;
  function followPixelRatio() {
    // Zoom, or another monitor, changes the ratio: matchMedia fires once this ratio stops
    // matching, and a zoom also fires resize. Either way the canvas is redone and the last frame
    // drawn again (check, below). The listeners go in destroy().
    mq = window.matchMedia?.(`(resolution: ${dpr}dppx)`);
    mq?.addEventListener("change", check);
    window.addEventListener("resize", check);
  }

  function followWidth() {
    // the space the explorer is given: reflow when the layout it calls for changes
    if (typeof ResizeObserver === "undefined" || !root.parentElement) return;
    observer = new ResizeObserver(() => {
      const next = layoutOf(scene, root.parentElement.clientWidth);
      if (next === layout) return;
      layout = next;
      setup();
      if (last) paint(last.fr, last.values, last.spec);
    });
    observer.observe(root.parentElement);
  }

  function check() {
    if ((window.devicePixelRatio || 1) === dpr) return;
    setup();
    if (last) paint(last.fr, last.values, last.spec);
    mq?.removeEventListener("change", check);
    mq = window.matchMedia?.(`(resolution: ${dpr}dppx)`);
    mq?.addEventListener("change", check);
  }

  setup();
  followPixelRatio();
  followWidth();
  return {
    paint,
    destroy() {
      // the view leaves the page (JS-1): nothing keeps watching the window or the parent
      observer?.disconnect();
      mq?.removeEventListener("change", check);
      window.removeEventListener("resize", check);
      clearTimeout(settle);
    },
    snapshot: () =>
      last && {
        values: last.values,
        nums: Array.from(last.fr.nums),
        strings: last.fr.strings,
        arrays: Object.fromEntries(
          Object.entries(last.fr.arrays).map(([k, a]) => [k, Array.from(a.data)]),
        ),
      },
  };
}

// ---------------------------------------------------------------- the frame player
// Paints, once per animation frame, the frame its source gives now ([frame, values, readout
// spec], or null: nothing to draw yet); stale frames are never drawn, only the latest.
function makePlayer(el, scene, meta, source, words) {
  const root = document.createElement("div");
  root.className = "attnlib-canvas";
  // The readout beside the picture where the width allows (below it otherwise), compact, so
  // controls, picture and readout fit a laptop screen together.
  root.style.cssText = "display:flex;flex-wrap:wrap;align-items:flex-start;gap:6px 12px";
  root.dataset.builder = meta.builder || "";
  root.dataset.args = JSON.stringify(meta.args || {});
  root.dataset.frames = "0";
  el.append(root);
  const painter = makePainter(root, scene, meta, words);
  let pending = false,
    painted = 0;
  function paint() {
    pending = false;
    const cur = source.current();
    if (!cur) return;
    painter.paint(...cur);
    painted += 1;
    root.dataset.frames = String(painted);
    root.dataset.values = JSON.stringify(cur[1]);
  }
  root.__attnlib = { snapshot: painter.snapshot };
  return {
    destroy: painter.destroy,
    schedule() {
      if (!pending) {
        pending = true;
        requestAnimationFrame(paint);
      }
    },
  };
}

// ---------------------------------------------------------------- frame sources
// The kernel (wire.py's protocol): frame sets per group of fast sliders, each valid for one token
// and the other sliders' steps, the "now" frame at the current values, and layers of slow arrays.
function kernelSource(model) {
  const fast = model.get("fast"),
    groups = model.get("groups"),
    meta = model.get("meta");
  const sets = {},
    layers = new Map(); // token -> a layer's arrays, the last meta.max_layers received (wire.py)
  let want = {},
    now = null,
    active = null;
  const index = (i) => nearest(fast[i].values, model.get(`v${i}`));
  const hasLayer = (s) => s.layer === null || s.layer === undefined || layers.has(s.layer);
  const layerOf = (s) => (s.layer === null || s.layer === undefined ? null : layers.get(s.layer));
  function fresh(g) {
    const s = sets[g];
    return (
      s && s.token === want[g] && s.fixed_fast.every(([i, k]) => index(i) === k) && hasLayer(s)
    );
  }
  return {
    current() {
      const g = active !== null ? active : groups.length ? 0 : null;
      if (g !== null && fresh(g)) {
        const s = sets[g],
          idx = groups[g].map(index);
        let flat = 0;
        idx.forEach((k, j) => {
          flat = flat * s.shape[j] + k;
        });
        const values = { ...s.fixed };
        s.names.forEach((n, j) => {
          values[n] = s.axes[j][idx[j]];
        });
        return [frameAt(s, flat, layerOf(s)), values, s.readout];
      }
      return now && hasLayer(now) ? [frameAt(now, 0, layerOf(now)), now.fixed, now.readout] : null;
    },
    start(schedule) {
      fast.forEach((f, i) => {
        model.on(`change:v${i}`, () => {
          active = f.group;
          schedule();
        });
      });
      model.on("msg:custom", (msg, buffers) => {
        const parsed = parseMessage(msg, buffers);
        if (msg.type === "layer") {
          layers.set(msg.token, parsed);
          if (layers.size > meta.max_layers) layers.delete(layers.keys().next().value);
        } else if (msg.type === "now") {
          want = msg.want;
          now = parsed;
        } else if (msg.type === "set") sets[msg.group] = parsed;
        schedule();
      });
      model.send({ type: "ready" }); // then the kernel sends the frames
    },
  };
}

// A static source (the site's pages): frameAt(values) gives [frame, values, readout spec] for
// any control values at once, from data in the page; no protocol, nothing to wait for.
function staticSource(frameAt) {
  let values = null;
  return {
    current: () => (values === null ? null : frameAt(values)),
    show(v) {
      values = v;
    },
  };
}

// In JupyterLab (anywidget): the kernel's frames.
function render({ model, el }) {
  const source = kernelSource(model);
  const words = { ...WORDS, ...(model.get("words") || {}) };
  const player = makePlayer(el, model.get("scene"), model.get("meta"), source, words);
  source.start(player.schedule);
  return player.destroy; // anywidget calls it when the view is disposed
}

// On a static page: the page's frames. traits: {scene, meta, words?}; frameAt(values) as above;
// words: the page's language's screen-reader words (WORDS's keys), over the traits' own. Returns
// show(values): draw the frame at these values (on the next animation frame).
function renderStatic({ el, traits, frameAt, words }) {
  const source = staticSource(frameAt);
  const said = { ...WORDS, ...(traits.words || {}), ...(words || {}) };
  const player = makePlayer(el, traits.scene, traits.meta, source, said);
  return {
    destroy: player.destroy,
    show(values) {
      source.show(values);
      player.schedule();
    },
  };
}

export default { render, renderStatic };
