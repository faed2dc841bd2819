// blocksim's report page: figures from the packed state (page_data.py), the diagram's block
// clicks, the sortable metrics table, and a self-test (#selftest) that writes its verdict into
// the page. Also used by the serve page, which redraws the figures with each new run.
"use strict";
const BS = {};

BS.inflate = async function (b64) {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
};

BS.decode = function (bytes, state) {
  const copy = (off, n, Kind) =>
    new Kind(bytes.slice(off, off + n * Kind.BYTES_PER_ELEMENT).buffer);
  const times = new Map();
  const timeOf = (ref) => {
    if (!times.has(ref.off)) times.set(ref.off, copy(ref.off, ref.n, Float64Array));
    return times.get(ref.off);
  };
  for (const fig of state.figures) {
    for (const tr of fig.traces) {
      const t = timeOf(tr.time);
      let x = t;
      if (tr.index) {
        const d = copy(tr.index.off, tr.index.n, Uint32Array);
        x = new Float64Array(d.length);
        let k = 0;
        for (let i = 0; i < d.length; i++) { k += d[i]; x[i] = t[k]; }
      }
      const v = tr.values, d = copy(v.off, v.n, Uint16Array);
      const y = new Array(d.length), step = (v.hi - v.lo) / 65534;
      let c = 0;
      for (let i = 0; i < d.length; i++) {
        c = (c + d[i]) & 0xffff;
        y[i] = c === 65535 ? null : v.lo + c * step;
      }
      tr.x = x; tr.y = y;
    }
  }
};

BS.plotlyTraces = function (fig) {
  const seen = new Set();
  return fig.traces.map((tr) => {
    const group = tr.label;
    const first = !seen.has(group);
    seen.add(group);
    const element = tr.port + "[" + tr.element + "]";
    const from = tr.blocks.length === 1 ? "block " + tr.blocks[0] + ", port " + element
      : "blocks " + tr.blocks.join(" and ") + ": " + tr.signal + " [" + tr.element + "]";
    return {
      x: tr.x, y: tr.y, type: "scatter", mode: "lines", name: tr.label,
      legendgroup: group, showlegend: first,
      xaxis: "x", yaxis: tr.row === 0 ? "y" : "y" + (tr.row + 1),
      line: { color: tr.colour, dash: tr.dash, width: 1.5 }, opacity: 1,
      meta: { blocks: tr.blocks, signal: tr.signal, element: tr.element },
      hovertemplate: from + (tr.variant ? "<br>" + tr.variant : "") +
        "<br>t = %{x:.6g} s<br>%{y:.6g} " + tr.unit + "<extra></extra>",
    };
  });
};

BS.layout = function (fig) {
  const n = fig.rows.length, gap = 0.06, h = (1 - gap * (n - 1)) / n;
  const layout = {
    title: { text: fig.title }, height: 140 + 190 * n, margin: { l: 70, r: 20, t: 50, b: 45 },
    legend: { orientation: "v", x: 1.02, y: 1 }, hovermode: "closest",
    xaxis: { title: { text: "time [s]" }, anchor: n === 1 ? "y" : "y" + n },
    annotations: [],
  };
  fig.rows.forEach((row, i) => {
    const top = 1 - i * (h + gap), key = i === 0 ? "yaxis" : "yaxis" + (i + 1);
    layout[key] = { title: { text: row.label }, domain: [top - h, top], anchor: "x" };
    if (row.title) {
      layout.annotations.push({ text: row.title, xref: "paper", yref: "paper", x: 0,
        y: top, xanchor: "left", yanchor: "bottom", showarrow: false, font: { size: 11 } });
    }
  });
  return layout;
};

BS.drawFigures = async function (state, holder, onFirstScreen) {
  // every figure of the state, drawn (or redrawn) into its div. Those in the first screen (the
  // browser window as the page opens, and at least the first figure) are drawn first and
  // onFirstScreen(count) is called when they are; the others follow one at a time, each after
  // the browser had a turn (a page that scrolls or clicks meanwhile responds). The promise
  // resolves when all of them are drawn.
  const bytes = await BS.inflate(state.blob);
  BS.decode(bytes, state);
  performance.mark("bs-decoded");
  const divs = state.figures.map((fig, k) => {
    let div = document.getElementById("bs-fig-" + k);
    if (!div) {
      div = document.createElement("div");
      div.id = "bs-fig-" + k;
      div.className = "bs-figure";
      div.style.minHeight = BS.layout(fig).height + "px";  // the page's layout as it will be
      holder.appendChild(div);
    }
    return div;
  });
  await BS.drawInOrder(divs, (k) => Plotly.react(divs[k], BS.plotlyTraces(state.figures[k]),
    BS.layout(state.figures[k]), { displaylogo: false, responsive: true }), onFirstScreen);
  return divs;
};

BS.drawInOrder = async function (divs, draw, onFirstScreen) {
  // draw(k) for each div: first those whose top is inside the window (and at least the first),
  // then onFirstScreen(their count), then the others one at a time, each after the browser
  // had a turn; resolves when all are drawn
  const inView = (div) => div.getBoundingClientRect().top < window.innerHeight;
  const first = divs.map((_, k) => k).filter((k) => k === 0 || inView(divs[k]));
  await Promise.all(first.map(draw));
  performance.mark("bs-first-screen");
  if (onFirstScreen) onFirstScreen(first.length);
  for (let k = 0; k < divs.length; k++) {
    if (first.includes(k)) continue;
    await new Promise((resolve) => setTimeout(resolve, 0));
    await draw(k);
  }
};

BS.stamp = function (id, count, total) {
  // performance.now() into the element `id` (its text and data-ms), with "(count of total)"
  const ms = performance.now(), mark = document.getElementById(id);
  mark.textContent = ms.toFixed(0) + (count === undefined ? "" : " (" + count + " of " +
    total + ")");
  mark.dataset.ms = ms.toFixed(1);
};

BS.highlight = function (block) {
  // the traces of `block` stand out (wider, opaque), the others fade; null clears
  const chosen = [];
  document.querySelectorAll(".bs-figure").forEach((div) => {
    if (!div.data) return;
    const opacity = [], width = [];
    div.data.forEach((tr, j) => {
      const mine = block !== null && tr.meta.blocks.includes(block);
      if (mine) chosen.push(div.id.slice(7) + ":" + j);
      opacity.push(block === null || mine ? 1 : 0.15);
      width.push(mine ? 3 : 1.5);
    });
    Plotly.restyle(div, { opacity: opacity, "line.width": width });
  });
  document.querySelectorAll("#bs-diagram .bs-selected")
    .forEach((el) => el.classList.remove("bs-selected"));
  const note = document.getElementById("bs-selection");
  if (block !== null) {
    BS.blockElement(block)?.classList.add("bs-selected");
    note.textContent = "highlighted: the " + chosen.length + " traces of block " + block +
      " (click it again to clear)";
  } else {
    note.textContent = "";
  }
  BS.selected = block;
  return chosen;
};

BS.blockElement = function (name) {
  const svg = document.querySelector("#bs-diagram svg");
  return svg ? svg.querySelector('[id="' + CSS.escape(name) + '"]') : null;
};

BS.wireDiagram = function (blocks) {
  for (const name of blocks) {
    const el = BS.blockElement(name);
    if (!el) continue;
    el.classList.add("bs-block");
    const tip = document.createElementNS("http://www.w3.org/2000/svg", "title");
    tip.textContent = "block " + name + ": click to highlight its traces";
    el.appendChild(tip);
    el.addEventListener("click", () => BS.highlight(BS.selected === name ? null : name));
  }
};

BS.table = function (table, header, rows, sortable) {
  const head = document.createElement("tr");
  header.forEach((text, c) => {
    const th = document.createElement("th");
    th.textContent = text;
    if (sortable) th.addEventListener("click", () => BS.sort(table, c, th));
    head.appendChild(th);
  });
  table.appendChild(head);
  for (const row of rows) {
    const tr = document.createElement("tr");
    row.forEach((value) => {
      const td = document.createElement("td");
      if (typeof value === "number") {
        td.className = "num";
        td.dataset.value = value;
        td.textContent = Number(value.toPrecision(6)).toString();
      } else {
        td.textContent = value === null ? "" : String(value);
      }
      tr.appendChild(td);
    });
    table.appendChild(tr);
  }
};

BS.sort = function (table, column, th) {
  const rows = Array.from(table.rows).slice(1);
  const up = !th.classList.contains("asc");
  table.querySelectorAll("th").forEach((h) => h.classList.remove("asc", "desc"));
  th.classList.add(up ? "asc" : "desc");
  const key = (tr) => {
    const td = tr.cells[column];
    return td && td.dataset.value !== undefined ? Number(td.dataset.value) : td ? td.textContent : "";
  };
  rows.sort((a, b) => {
    const ka = key(a), kb = key(b);
    const order = typeof ka === "number" && typeof kb === "number" ? ka - kb
      : String(ka).localeCompare(String(kb));
    return up ? order : -order;
  });
  rows.forEach((tr) => table.appendChild(tr));
};

BS.selfTest = async function (state, blocks) {
  // what a test reads back: the figures and traces drawn, and what each block's click lit up
  const figures = Array.from(document.querySelectorAll(".bs-figure")).map((div) => ({
    title: div.layout.title.text,
    traces: div.data.map((tr) => ({ name: tr.name, blocks: tr.meta.blocks,
      signal: tr.meta.signal, element: tr.meta.element, points: tr.x.length,
      y_last: tr.y[tr.y.length - 1], hover: tr.hovertemplate, group: tr.legendgroup,
      legend: tr.showlegend, yaxis: tr.yaxis })),
    axes: Object.keys(div.layout).filter((k) => /^[xy]axis\d*$/.test(k)).sort()
      .map((k) => k + ": " + div.layout[k].title.text),
  }));
  const clicks = {};
  for (const name of blocks) {
    const el = BS.blockElement(name);
    if (!el) { clicks[name] = "no element"; continue; }
    BS.selected = null;
    el.dispatchEvent(new MouseEvent("click", { bubbles: true }));
    await new Promise((r) => requestAnimationFrame(r));
    const lit = [];
    document.querySelectorAll(".bs-figure").forEach((div) => div.data.forEach((tr, j) => {
      if (tr.opacity === 1 && tr.line.width === 3) lit.push(div.id.slice(7) + ":" + j);
    }));
    clicks[name] = lit;
  }
  BS.highlight(null);
  const table = document.getElementById("bs-metrics");
  const sorted = [];
  if (table.rows.length > 1) {
    for (let k = 0; k < 2; k++) {        // the first value column, ascending then descending
      table.rows[0].cells[2].dispatchEvent(new MouseEvent("click", { bubbles: true }));
      sorted.push([table.rows[1].cells[0].textContent, table.rows[1].cells[1].textContent]);
    }
  }
  const verdict = { figures: figures, clicks: clicks, sorted: sorted,
    drawn_ms: Number(document.getElementById("bs-drawn").dataset.ms),
    first_screen_ms: Number(document.getElementById("bs-first-screen").dataset.ms) };
  document.getElementById("bs-selftest").textContent = JSON.stringify(verdict);
  return verdict;
};

BS.report = async function () {
  const state = JSON.parse(document.getElementById("bs-state").textContent);
  await BS.drawFigures(state, document.getElementById("bs-figures"),
    (count) => BS.stamp("bs-first-screen", count, state.figures.length));
  BS.stamp("bs-drawn");
  const blocks = Array.from(new Set(state.figures.flatMap((f) => f.traces.flatMap((t) => t.blocks))));
  BS.wireDiagram(blocks);
  const width = Math.max(0, ...state.metrics.map((r) => r.length - 2));
  BS.table(document.getElementById("bs-metrics"),
    ["variant", "metric", ...Array.from({ length: width }, (_, i) => "[" + i + "]")],
    state.metrics, true);
  const keys = state.provenance.length ? Object.keys(state.provenance[0]) : [];
  BS.table(document.getElementById("bs-provenance"), keys,
    state.provenance.map((row) => keys.map((k) => row[k])), false);
  document.body.dataset.drawn = "yes";
  if (location.hash === "#selftest") return BS.selfTest(state, blocks);
  return null;
};

if (document.getElementById("bs-state")) {
  window.blocksimReady = BS.report().catch((err) => {
    document.getElementById("bs-selftest").textContent = "error: " + err;
    throw err;
  });
}
