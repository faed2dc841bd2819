// the tuning page: a slider and a field per element of each tuned parameter; at most one run
// request in flight, and only the latest values are sent when it returns
const BSserve = { seq: 0, inFlight: false, pending: null, last: null, waiters: [] };

BSserve.values = function () {
  const out = {};
  document.querySelectorAll("#bs-controls input[type=number]").forEach((field) => {
    (out[field.dataset.key] = out[field.dataset.key] || [])[Number(field.dataset.element)] =
      Number(field.value);
  });
  return out;
};

BSserve.changed = function () {
  BSserve.pending = BSserve.values();
  if (!BSserve.inFlight) BSserve.send();
};

BSserve.send = async function () {
  const values = BSserve.pending;
  BSserve.pending = null;
  BSserve.inFlight = true;
  const seq = ++BSserve.seq;
  const status = document.getElementById("bs-run-status");
  try {
    const reply = await (await fetch("/run", { method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ seq: seq, values: values }) })).json();
    if (reply.error) {
      status.textContent = "error: " + reply.error;
      status.className = "bs-status bs-error";
    } else if (!reply.superseded && BSserve.pending === null) {
      await BSserve.draw(reply);
    }
  } finally {
    BSserve.inFlight = false;
    if (BSserve.pending !== null) BSserve.send();
  }
};

BSserve.draw = async function (run) {
  const started = performance.now();
  await BS.drawFigures(run, document.getElementById("bs-figures"));
  const status = document.getElementById("bs-run-status");
  status.className = "bs-status";
  status.textContent = "run " + run.runs + " drawn (" + (performance.now() - started).toFixed(0) +
    " ms to draw); values " + JSON.stringify(run.values);
  const lines = Object.entries(run.values).map(([k, v]) => k + ": " + JSON.stringify(
    v.length === 1 ? v[0] : v));
  document.getElementById("bs-variant").textContent =
    "variants:\n  tuned: {" + lines.join(", ") + "}";
  BSserve.last = run;
  BSserve.waiters.splice(0).forEach((w) => w(run));
};

BSserve.drawn = function () {
  // a promise of the next drawn run (the tests await it after moving a control)
  return new Promise((resolve) => BSserve.waiters.push(resolve));
};

BSserve.controls = function (tune) {
  const holder = document.getElementById("bs-controls");
  for (const [key, elements] of Object.entries(tune)) {
    elements.forEach((value, i) => {
      const row = document.createElement("div");
      const label = document.createElement("label");
      label.textContent = key + (elements.length > 1 ? "[" + i + "]" : "");
      const span = value === 0 ? 1 : 2 * Math.abs(value);
      const slider = Object.assign(document.createElement("input"), { type: "range",
        min: value === 0 ? -1 : Math.min(0, 2 * value), max: value === 0 ? 1 : Math.max(0, 2 * value),
        step: span / 1000, value: value });
      const field = Object.assign(document.createElement("input"), { type: "number",
        value: value, step: "any" });
      field.dataset.key = key;
      field.dataset.element = i;
      slider.id = "bs-slider-" + key + "-" + i;
      field.id = "bs-field-" + key + "-" + i;
      slider.addEventListener("input", () => { field.value = slider.value; BSserve.changed(); });
      field.addEventListener("change", () => { slider.value = field.value; BSserve.changed(); });
      row.append(label, slider, field);
      holder.appendChild(row);
    });
  }
};

BSserve.save = async function () {
  // the values of the run drawn, saved as a variant (the server writes NAME.tuned.yaml); the
  // promise resolves with the server's answer ({file, command} or {error})
  const status = document.getElementById("bs-save-status");
  const name = document.getElementById("bs-save-name").value;
  const reply = await (await fetch("/save", { method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ name: name, values: BSserve.last.values }) })).json();
  status.textContent = reply.error ? "error: " + reply.error
    : "saved variant " + name + " in " + reply.file + "; run it: " + reply.command;
  status.className = reply.error ? "bs-status bs-error" : "bs-status";
  return reply;
};

window.blocksimReady = (async function () {
  document.getElementById("bs-save").addEventListener("click", () => BSserve.save());
  const start = await (await fetch("/state")).json();
  BSserve.controls(start.tune);
  BSserve.seq = start.run.seq;
  if (start.run.error) {
    const status = document.getElementById("bs-run-status");
    status.textContent = "error: " + start.run.error;
    status.className = "bs-status bs-error";
    return 0;
  }
  await BSserve.draw(start.run);
  return start.run.runs;
})();
