// the study page: the figures study_page.py computed (histograms, heat maps, Sobol tornado
// charts), drawn first-screen first (report.js's BS.drawInOrder), and its sortable tables;
// with #selftest in the address it writes what it drew into #bs-selftest
BS.study = async function () {
  const state = JSON.parse(document.getElementById("bs-study").textContent);
  const holder = document.getElementById("bs-figures");
  const divs = state.figures.map((fig, k) => {
    const div = document.createElement("div");
    div.id = "bs-fig-" + k;
    div.className = "bs-figure";
    div.style.minHeight = fig.layout.height + "px";
    holder.appendChild(div);
    return div;
  });
  await BS.drawInOrder(divs, (k) => Plotly.react(divs[k], state.figures[k].data,
    state.figures[k].layout, { displaylogo: false, responsive: true }),
    (count) => BS.stamp("bs-first-screen", count, divs.length));
  BS.stamp("bs-drawn");
  BS.table(document.getElementById("bs-quantiles"),
    ["metric column", "members", "min", "median", "p99", "max"], state.quantiles, true);
  BS.table(document.getElementById("bs-worst"),
    ["metric column", "rank", "member", "value", ...state.factors, "replay"], state.worst, true);
  if (state.failed.length) {
    BS.table(document.getElementById("bs-failed"),
      ["member", "status", "message", ...state.factors, "replay"], state.failed, true);
  } else {
    document.getElementById("bs-failed").outerHTML = "<p class='bs-note'>none</p>";
  }
  document.body.dataset.drawn = "yes";
  if (location.hash !== "#selftest") return null;
  const text = (id) => Array.from(document.getElementById(id).rows).map((tr) =>
    Array.from(tr.cells).map((td) => td.textContent));
  const verdict = {
    figures: divs.map((div) => ({ title: div.layout.title.text,
      data: div.data.map((tr) => ({ type: tr.type, name: tr.name || "", x: tr.x, y: tr.y,
        z: tr.z || null, error: tr.error_x ? tr.error_x.array : null })),
      drawn: div.querySelectorAll(".main-svg").length > 0 })),
    quantiles: text("bs-quantiles"), worst: text("bs-worst"),
    drawn_ms: Number(document.getElementById("bs-drawn").dataset.ms),
    first_screen_ms: Number(document.getElementById("bs-first-screen").dataset.ms),
  };
  document.getElementById("bs-selftest").textContent = JSON.stringify(verdict);
  return verdict;
};

if (document.getElementById("bs-study")) {
  window.blocksimReady = BS.study().catch((err) => {
    document.getElementById("bs-selftest").textContent = "error: " + err;
    throw err;
  });
}
