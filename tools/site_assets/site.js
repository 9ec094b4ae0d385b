// A static page's explorers: each plays frames computed at build time (tools/site.py), with the
// same explorer.js as JupyterLab (imported from a blob URL: a page opened from disk may not load a
// module file), through its static frame source: explorer.renderStatic({el, traits, frameAt})
// draws frameAt(values) when show(values) is called. There is no protocol here (that is the
// kernel's, in explorer.js and wire.py): this file only reads the blob and answers frameAt.
//
// Data per explorer (two <script> elements in its host): the spec (JSON) and the frames (gzip,
// base64), in the layout tools/site_state.py documents (version LAYOUT_VERSION; its Python reader
// is decode_blob): the product of every live control's values, each array key stored once per
// distinct value (a table) and an index of ids per frame and key; the readout numbers at the
// precision the readout shows them. Affine sliders (Explorer(affine=...)): the entries that move
// with their values v are a float64 basis per frame of the other controls, B0 and B1..Bm; a
// frame's entry is B0 + v1*B1 + ... + vm*Bm, summed in that order in float64 (as the build
// checked it), then stored into the float32 arrays explorer.js reads.

function bytesOf(b64) {
  const s = atob(b64.trim());
  const u = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) u[i] = s.charCodeAt(i);
  return u;
}

async function inflate(b64) {
  const stream = new Blob([bytesOf(b64)]).stream().pipeThrough(new DecompressionStream("gzip"));
  return await new Response(stream).arrayBuffer();
}

// The blob's layout version this page reads (tools/site_state.py LAYOUT_VERSION, which documents
// the layout; decode_blob is its reader in Python).
const LAYOUT_VERSION = 2;

function frameSource(spec, buffer) {
  // frameAt(cur), cur = {control: index into its values}: [frame, values, readout spec], the frame
  // as explorer.js's painter reads it ({arrays: {key: {data, shape}}, nums, strings, texts}).
  const L = spec.layout;
  if (L.version !== LAYOUT_VERSION)
    throw new Error(`frames in layout version ${L.version}; this page reads ${LAYOUT_VERSION}`);
  // The readout, one typed column per number: integers at the digits shown (the number is the
  // stored one / div, as exact as parsing the text) or float64 (div 1).
  const RTypes = { i1: Int8Array, i2: Int16Array, i4: Int32Array, f8: Float64Array };
  const rcols = L.readout.map(([code, off, n]) => new RTypes[code](buffer, off, n));
  const rdiv = L.readout.map(([, , , div]) => div);
  const tables = {};
  for (const [k, off, len] of L.tables) tables[k] = new Float32Array(buffer, off, len);
  // per key (+ readout, texts, strings): the id of each frame's value in its table
  const Types = { 1: Uint8Array, 2: Uint16Array, 4: Uint32Array };
  const cols = L.index.map(([w, off, n]) => (w ? new Types[w](buffer, off, n) : null));
  const id = (j, fl) => (cols[j] ? cols[j][fl] : 0);
  const keys = spec.keys; // [name, floats per frame], sorted
  const nk = keys.length + 3;
  const controls = spec.controls;
  // the affine basis: per key, a float64 table and the ids of (B0, B1..Bm) of each frame
  const A = L.affine;
  const m1 = A ? A.names.length + 1 : 1;
  const basis = {};
  if (A)
    for (const [k, size, toff, tlen, w, ioff] of A.keys)
      basis[k] = {
        size,
        table: new Float64Array(buffer, toff, tlen),
        ids: new Types[w](buffer, ioff, spec.frames * m1),
      };
  // B0 + sum_j v[j] * Bj of frame fl, into out at [0, size) (or at the entries `at`)
  function combine(b, fl, v, out, at) {
    const { ids, table: t, size } = b;
    for (let i = 0; i < size; i++) {
      let s = t[ids[fl * m1] * size + i];
      for (let j = 0; j < v.length; j++) s += v[j] * t[ids[fl * m1 + 1 + j] * size + i];
      out[at ? at[i] : i] = s;
    }
  }
  return (cur) => {
    let fl = 0; // the frame: row-major over spec.dims
    for (const [name, size] of spec.dims) fl = fl * size + cur[name];
    const byName = Object.fromEntries(controls.map((c) => [c.name, c]));
    const v = A ? A.names.map((n) => byName[n].values[cur[n]]) : [];
    const arrays = {};
    keys.forEach(([k, size], j) => {
      const shape = spec.template.arrays[k];
      if (basis[k]) {
        const data = new Float32Array(size);
        combine(basis[k], fl, v, data, null);
        arrays[k] = { data, shape };
      } else {
        const r = id(j, fl);
        arrays[k] = { data: tables[k].subarray(r * size, (r + 1) * size), shape };
      }
    });
    const r = id(nk - 3, fl);
    const nums = new Float64Array(spec.rstride);
    for (let c = 0; c < spec.rstride; c++) nums[c] = rcols[c][r] / rdiv[c];
    if (basis["@readout"]) combine(basis["@readout"], fl, v, nums, A.rcols);
    const texts = {};
    const tv = spec.texts_table[id(nk - 2, fl)];
    spec.template.texts.forEach((k, j) => {
      texts[k] = tv[j];
    });
    const strings = spec.has_strings ? spec.strings_table[id(nk - 1, fl)] : [];
    const values = Object.fromEntries(controls.map((c) => [c.name, c.values[cur[c.name]]]));
    return [{ arrays, nums, strings, texts }, values, spec.template.readout];
  };
}

function controlsUI(host, spec, ui) {
  const box = document.createElement("div");
  box.className = "site-controls";
  const uid = host.id;
  for (const c of spec.controls) {
    const wrap = document.createElement("div");
    wrap.className = `site-control${c.live ? "" : " off"}`;
    const label = document.createElement("label");
    const id = `${uid}-${c.name}`;
    label.htmlFor = id;
    label.textContent = c.label;
    let input;
    const out = document.createElement("output");
    out.htmlFor = id;
    if (c.kind === "range") {
      input = document.createElement("input");
      input.type = "range";
      input.min = "0";
      input.max = String(c.values.length - 1);
      input.step = "1";
      input.value = String(c.index);
      input.setAttribute("aria-valuetext", c.labels[c.index]);
      out.textContent = c.labels[c.index];
      input.addEventListener("input", () => {
        const i = Number(input.value);
        out.textContent = c.labels[i];
        input.setAttribute("aria-valuetext", c.labels[i]);
        ui.onChange(c.name, i);
      });
    } else if (c.kind === "select") {
      input = document.createElement("select");
      c.labels.forEach((l, i) => {
        const o = document.createElement("option");
        o.value = String(i);
        o.textContent = l;
        input.append(o);
      });
      input.value = String(c.index);
      input.addEventListener("change", () => ui.onChange(c.name, Number(input.value)));
    } else {
      input = document.createElement("input");
      input.type = "checkbox";
      input.checked = !!c.values[c.index];
      // the index of the checked state among the control's values (tools/site_state.py: [false, true])
      input.addEventListener("change", () => ui.onChange(c.name, c.values.indexOf(input.checked)));
    }
    input.id = id;
    input.dataset.control = c.name;
    if (!c.live) {
      input.disabled = true;
      input.title = WORDS.fixed;
    }
    wrap.append(label, input);
    if (c.kind === "range") wrap.append(out);
    box.append(wrap);
  }
  if (spec.controls.some((c) => !c.live)) {
    const note = document.createElement("p");
    note.className = "site-note";
    note.textContent = WORDS.greyed;
    box.append(note);
  }
  return box;
}

// The page's words in its language, from the same tables as its text (tools/site.py LANGUAGES,
// "site_words"): {fixed, greyed, failed, sr}; sr: the screen-reader sentences for explorer.js.
const WORDS = JSON.parse(document.getElementById("site-words").textContent);

async function mount(host, explorer) {
  const spec = JSON.parse(host.querySelector("script.attnlib-spec").textContent);
  const buffer = await inflate(host.querySelector("script.attnlib-frames").textContent);
  const cur = Object.fromEntries(spec.controls.map((c) => [c.name, c.index]));
  const el = document.createElement("div");
  el.className = "site-view";
  let view = null;
  const ui = {
    onChange(name, i) {
      cur[name] = i;
      view.show({ ...cur });
    },
  };
  host.append(controlsUI(host, spec, ui), el); // in the page first: its width picks the layout
  view = explorer.renderStatic({
    el,
    traits: spec.traits,
    frameAt: frameSource(spec, buffer),
    // an explorer's own sentences (its name in the page's language) before the page's
    words: { ...WORDS.sr, ...(spec.traits.words || {}) },
  });
  host.querySelector(".site-fallback")?.remove();
  view.show({ ...cur });
  host.dataset.ready = "1";
  // when the first frame is painted (benchmarks/site_latency.py reads it): once, then stop
  const root = el.querySelector(".attnlib-canvas");
  new MutationObserver((_, obs) => {
    host.dataset.drawnAt = String(performance.now());
    obs.disconnect();
  }).observe(root, { attributes: true, attributeFilter: ["data-frames"] });
}

const src = document.getElementById("attnlib-explorer-js").textContent;
const url = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
const explorer = (await import(url)).default;
for (const host of document.querySelectorAll(".site-explorer")) {
  mount(host, explorer).catch((err) => {
    host.dataset.error = String(err);
    const p = document.createElement("p");
    p.className = "site-note";
    p.textContent = `${WORDS.failed}${err}`;
    host.append(p);
  });
}
