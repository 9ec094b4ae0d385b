// The static model: plays an explorer from frames computed at build time (tools/site.py), in
// place of the kernel. The page runs the same explorer.js as JupyterLab (imported from a blob URL:
// a page opened from disk may not load a module file) and hands it a model with the anywidget
// surface it uses: get(name), on(event, cb), send(msg). It answers {type: "ready"} and every
// control change with the messages the kernel sends: {type: "now"} (the frame at the current
// values, with want = each group's current token) and {type: "set"} (every frame of one group's
// sliders at the other controls' current values); buffers [float32 arrays, float64 readout].
//
// Data per explorer (two <script> elements in its host): the spec (JSON) and the frames (gzip,
// base64). The frames are the product of every live control's values, each array key stored once
// per distinct value (a table) and a Uint32 index per frame and key. The readout numbers are
// stored at the precision the readout shows them (tools/site.py readout_columns).
//
// Affine sliders (Explorer(affine=...), tools/site_affine.py): the arrays and readout columns
// that move with their values v are stored as a float64 basis per frame of the other controls,
// B0 and B1..Bm; a frame's entry is B0 + v1*B1 + ... + vm*Bm, summed in that order in float64
// (as the build checked it), then stored into the float32 arrays explorer.js reads.

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

function staticModel(spec, buffer, ui) {
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
  const keys = spec.keys; // [name, floats per frame], sorted as the frame sets order them
  const nk = keys.length + 3;
  const stride = keys.reduce((a, [, n]) => a + n, 0);
  const rstride = spec.rstride;
  const controls = Object.fromEntries(spec.controls.map((c) => [c.name, c]));
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
  // B0 + sum_j v[j] * Bj of frame fl, into out[o..o+size) (every entry, or those in `at`)
  function combine(b, fl, v, out, o, at) {
    const ids = b.ids,
      t = b.table,
      size = b.size;
    for (let i = 0; i < size; i++) {
      let s = t[ids[fl * m1] * size + i];
      for (let j = 0; j < v.length; j++) s += v[j] * t[ids[fl * m1 + 1 + j] * size + i];
      out[at ? o + at[i] : o + i] = s;
    }
  }
  const cur = Object.fromEntries(spec.controls.map((c) => [c.name, c.index]));
  const traits = { ...spec.traits };
  const fastNames = spec.fast_names; // fast slider i -> control name
  const listeners = {};
  let token = 1;
  let want = {};
  let timer = null;
  const stale = new Set(); // groups whose sent set was computed at other values than now

  const frontValue = (name) => controls[name].front[cur[name]];
  fastNames.forEach((n, i) => {
    traits[`v${i}`] = frontValue(n);
  });
  const controlValue = (name) => controls[name].values[cur[name]];
  function flat(idx) {
    let f = 0;
    spec.dims.forEach(([name, size]) => {
      f = f * size + idx[name];
    });
    return f;
  }
  // frames at the control indices of each of `idxs` ({name: index}, as cur)
  function gather(idxs, extra) {
    const flats = idxs.map(flat);
    const coefs = idxs.map((idx) => (A ? A.names.map((nm) => controls[nm].values[idx[nm]]) : []));
    const n = flats.length,
      f32 = new Float32Array(n * stride),
      f64 = new Float64Array(n * rstride),
      text_values = [],
      strings = [];
    flats.forEach((fl, i) => {
      let o = i * stride;
      keys.forEach(([k, size], j) => {
        if (basis[k]) combine(basis[k], fl, coefs[i], f32, o, null);
        else {
          const r = id(j, fl);
          f32.set(tables[k].subarray(r * size, (r + 1) * size), o);
        }
        o += size;
      });
      const r = id(nk - 3, fl);
      for (let c = 0; c < rstride; c++) f64[i * rstride + c] = rcols[c][r] / rdiv[c];
      if (basis["@readout"]) combine(basis["@readout"], fl, coefs[i], f64, i * rstride, A.rcols);
      text_values.push(spec.texts_table[id(nk - 2, fl)]);
      strings.push(spec.strings_table[id(nk - 1, fl)]);
    });
    const header = {
      ...spec.template,
      ...extra,
      n,
      text_values: spec.template.texts.length ? text_values : [],
      strings: spec.has_strings ? strings : [],
    };
    return [header, [f32.buffer, f64.buffer]];
  }
  function emit(event, ...args) {
    for (const cb of listeners[event] || []) cb(...args);
  }
  function liveGroup(g) {
    return spec.traits.groups[g].every((i) => controls[fastNames[i]].live);
  }
  function sendNow() {
    const fixed = Object.fromEntries(spec.controls.map((c) => [c.name, controlValue(c.name)]));
    const [h, b] = gather([cur], { fixed, group: -1, token: 0, shape: [1], want });
    emit("msg:custom", { ...h, type: "now" }, b);
  }
  function sendSet(g) {
    if (!liveGroup(g)) return;
    const names = spec.traits.groups[g].map((i) => fastNames[i]);
    const shape = names.map((n) => controls[n].values.length);
    const idxs = [];
    const total = shape.reduce((a, b) => a * b, 1);
    for (let k = 0; k < total; k++) {
      const idx = { ...cur };
      let r = k;
      for (let j = names.length - 1; j >= 0; j--) {
        idx[names[j]] = r % shape[j];
        r = Math.floor(r / shape[j]);
      }
      idxs.push(idx);
    }
    const fixed = {};
    for (const c of spec.controls)
      if (!names.includes(c.name)) fixed[c.name] = controlValue(c.name);
    const fixed_fast = [];
    fastNames.forEach((n, i) => {
      if (!names.includes(n)) fixed_fast.push([i, cur[n]]);
    });
    const axes = names.map((n) => controls[n].values);
    const [h, b] = gather(idxs, {
      group: g,
      token: want[g],
      shape,
      names,
      axes,
      fixed,
      fixed_fast,
    });
    emit("msg:custom", { ...h, type: "set" }, b);
  }
  function newTokens() {
    want = {};
    spec.traits.groups.forEach((_, g) => {
      want[g] = token++;
    });
  }
  const model = {
    get: (name) => traits[name],
    set: () => {},
    save_changes: () => {},
    on: (event, cb) => {
      if (!listeners[event]) listeners[event] = [];
      listeners[event].push(cb);
    },
    off: () => {},
    send: (msg) => {
      if (msg && msg.type === "ready")
        setTimeout(() => {
          newTokens();
          sendNow();
          spec.traits.groups.forEach((_, g) => {
            sendSet(g);
          });
        }, 0);
    },
  };
  // A control moved (name, index into its values).
  ui.onChange = (name, i) => {
    cur[name] = i;
    const fi = fastNames.indexOf(name);
    if (fi >= 0) {
      const mine = spec.traits.fast[fi].group;
      if (stale.delete(mine)) sendSet(mine); // its set is drawn, so it must be current
      traits[`v${fi}`] = frontValue(name);
      emit(`change:v${fi}`);
      // The other groups' sets depend on this value: rebuild them after the move (until then,
      // a move of theirs rebuilds its own set first, above).
      spec.traits.groups.forEach((_, g) => {
        if (g !== mine) stale.add(g);
      });
      clearTimeout(timer);
      timer = setTimeout(() => {
        for (const g of stale) sendSet(g);
        stale.clear();
      }, 60);
    } else {
      stale.clear();
      newTokens();
      sendNow();
      spec.traits.groups.forEach((_, g) => {
        sendSet(g);
      });
    }
  };
  return model;
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
      input.addEventListener("change", () => ui.onChange(c.name, input.checked ? 1 : 0));
    }
    input.id = id;
    input.dataset.control = c.name;
    if (!c.live) {
      input.disabled = true;
      input.title = "fixed on this page: change it live in JupyterLab (make lab)";
    }
    wrap.append(label, input);
    if (c.kind === "range") wrap.append(out);
    box.append(wrap);
  }
  if (spec.controls.some((c) => !c.live)) {
    const note = document.createElement("p");
    note.className = "site-note";
    note.textContent = `Greyed controls are fixed on this page (their frames would not fit it); run the notebook with make lab to move them.`;
    box.append(note);
  }
  return box;
}

async function mount(host, explorer) {
  const spec = JSON.parse(host.querySelector("script.attnlib-spec").textContent);
  const buffer = await inflate(host.querySelector("script.attnlib-frames").textContent);
  const ui = {};
  const model = staticModel(spec, buffer, ui);
  const el = document.createElement("div");
  el.className = "site-view";
  const fallback = host.querySelector(".site-fallback");
  host.append(controlsUI(host, spec, ui), el);
  explorer.render({ model, el });
  if (fallback) fallback.remove();
  host.dataset.ready = "1";
  const root = el.querySelector(".attnlib-canvas");
  const seen = () => {
    if (root && root.dataset.frames !== "0") host.dataset.drawnAt = String(performance.now());
    else requestAnimationFrame(seen);
  };
  requestAnimationFrame(seen);
}

const src = document.getElementById("attnlib-explorer-js").textContent;
const url = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
const explorer = (await import(url)).default;
for (const host of document.querySelectorAll(".site-explorer")) {
  mount(host, explorer).catch((err) => {
    host.dataset.error = String(err);
    const p = document.createElement("p");
    p.className = "site-note";
    p.textContent = `This explorer could not start: ${err}`;
    host.append(p);
  });
}
