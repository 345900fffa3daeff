/* page/view.js: events, the view in the URL fragment, start-up. */
/* ------------------------------------------------------------ events */

function zoomTo(i) {
  zoom = i;
  tip.style.display = "none";
  render();
  saveView();
}

/* ------------------------------------------------------------ the view in the URL */

/* Thread filter, search, zoom (the frame texts from the root down), the
   selected function, the view, statuses left out and the theme (once
   toggled) in the fragment, so a link or a reload opens the same
   view: #filter=g2&search=fib&zoom=...&fn=... (nothing leaves the page). */
function saveView() {
  const p = new URLSearchParams();
  const q = $("search").value.trim();
  if ($("filter").value !== "all") p.set("filter", $("filter").value);
  if (q) p.set("search", q);
  if (zoom) {
    const path = [];
    for (let i = zoom; i > 0; i = par[i]) path.unshift(text(loc[i]));
    p.set("zoom", path.join("\n"));
  }
  if (selFn >= 0) p.set("fn", fnName[selFn]);
  if (view !== "graph") p.set("view", view);
  if (sandFn >= 0) p.set("sandwich", fnName[sandFn]);
  if (hideStatus.size) p.set("hide", [...hideStatus].map((s) => statusName.get(s)).join("\n"));
  if (document.documentElement.dataset.theme) p.set("theme", document.documentElement.dataset.theme);
  const h = p.toString();
  try { history.replaceState(null, "", h ? "#" + h : location.pathname + location.search); } catch (e) { /* a sandboxed page */ }
}

/* The node the frame texts lead to from the root, or as far as they go. */
function nodeAtPath(texts) {
  let n = 0;
  for (const t of texts) {
    let c = n + 1;
    while (c < end[n] && text(loc[c]) !== t) c = end[c];
    if (c >= end[n]) break;
    n = c;
  }
  return n;
}

function restoreView(saved) {
  const fn = fnName.indexOf(saved.get("fn") || "");
  if (saved.get("search")) {
    $("search").value = saved.get("search");
    setSearch(saved.get("search"));
  }
  if (fn >= 0) markFn(fn);
  if (saved.get("zoom")) zoom = nodeAtPath(saved.get("zoom").split("\n"));
  saveView();
}

function applyFilter() {
  rebuild();
  render();
  saveView();
}

canvas.addEventListener("mousemove", (ev) => {
  const i = nodeAt(ev.offsetX, ev.offsetY);
  if (i < 0) tip.style.display = "none";
  else showTip(i, ev.clientX, ev.clientY);
});
canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
canvas.addEventListener("click", (ev) => {
  const i = nodeAt(ev.offsetX, ev.offsetY);
  if (i > 0) markFn(fnOf[loc[i]]);      /* its row selected, its other frames highlighted */
  if (i >= 0 && i !== zoom) zoomTo(i); else render();
});
$("reset").addEventListener("click", () => zoomTo(0));
$("filter").addEventListener("change", applyFilter);
$("colour").addEventListener("change", () => render());
$("search").addEventListener("input", (ev) => setSearch(ev.target.value.trim()));
/* Keys: the arrows move the zoomed (and selected) frame: up to its parent,
   down to its widest child, left and right to its siblings; / goes to the
   search; Esc leaves a field and shows the whole graph again. */
function stepFrom(i, key) {
  if (key === "ArrowUp") return i > 0 ? par[i] : -1;
  const p = par[i];
  let best = -1, prev = -1;
  if (key === "ArrowDown") {
    for (let c = i + 1; c < end[i]; c = end[c]) if (best < 0 || tot[c] > tot[best]) best = c;
    return best;
  }
  if (i === 0 || (key !== "ArrowLeft" && key !== "ArrowRight")) return -1;
  for (let c = p + 1; c < end[p]; prev = c, c = end[c]) {
    if (key === "ArrowLeft" && c === i) return prev;
    if (key === "ArrowRight" && prev === i) return c;
  }
  return -1;
}

document.addEventListener("keydown", (ev) => {
  const field = ev.target.closest && ev.target.closest("input, select, textarea");
  if (ev.key === "Escape") { if (field) field.blur(); zoomTo(0); return; }
  if (field || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (ev.key === "/") { ev.preventDefault(); $("search").focus(); return; }
  const next = stepFrom(zoom, ev.key);
  if (next < 0) return;
  ev.preventDefault();
  if (next > 0) markFn(fnOf[loc[next]]);
  zoomTo(next);
});

/* The toggle flips what is shown (the system's choice at first), for this page only. */
$("theme").addEventListener("click", () => {
  const dark = getComputedStyle(document.documentElement).getPropertyValue("--bg").trim() !== "#fff";
  document.documentElement.dataset.theme = dark ? "light" : "dark";
  if (view === "sandwich") rebuild(false);   /* its callers' canvas drawn again */
  render();
  saveView();
});
let resizing = false;
addEventListener("resize", () => {
  if (resizing) return;
  resizing = true;
  requestAnimationFrame(() => { resizing = false; render(); });
});

/* ------------------------------------------------------------ start */

$("colour-box").hidden = statusName.size === 0 || !!DIFF;
if (DIFF) document.querySelector("h1").textContent = "pybpfprof differential flame graph";
setupFilter();
const saved = new URLSearchParams(location.hash.slice(1));
if (["light", "dark"].includes(saved.get("theme"))) document.documentElement.dataset.theme = saved.get("theme");
if ([...$("filter").options].some((o) => o.value === saved.get("filter"))) $("filter").value = saved.get("filter");
for (const [s, name] of statusName) if ((saved.get("hide") || "").split("\n").includes(name)) hideStatus.add(s);
sandFn = fnName.indexOf(saved.get("sandwich") || "");
if (saved.get("view") === "inverted" || (saved.get("view") === "sandwich" && sandFn >= 0)) view = saved.get("view");
else sandFn = -1;
rebuild();
const tBuilt = performance.now();
restoreView(saved);
render();
const tRendered = performance.now();

/* For tests and the curious: timings (ms since navigation start) and a view
   of what is on screen. "data-rendered" is set once the first frame painted. */
window.pbp = {
  timings: { start: t0, parsed: tParsed, built: tBuilt, rendered: tRendered, painted: 0, nodes: N },
  state: () => ({ zoom: zoom ? text(loc[zoom]) : "all", zoomTotal: tot[zoom], viewTotal: tot[0], total: META.total,
                  matched: $("matched").textContent, filter: $("filter").value, nodes: N }),
  frames: () => {
    const r = canvas.getBoundingClientRect();
    return dN.map((i, k) => Object.assign({ text: i > 0 ? text(loc[i]) : "all", label: label(i, dW[k], false),
                               depth: dep[i], samples: tot[i], x: dX[k], w: dW[k],
                               cx: r.left + dX[k] + dW[k] / 2, cy: r.top + dep[i] * ROW + ROW / 2, fill: fill(i) },
                               DIFF ? { before: totB[i], after: totA[i], delta: delta(i) } : {}));
  },
  /* the function table's rows as shown, in order */
  table: () => fnShown.map((r) => Object.assign({ name: fnName[r.f] }, r)),
  selectFunction: (name) => { selectFn(fnName.indexOf(name)); return selFn; },
  selectedFunction: () => (selFn >= 0 ? fnName[selFn] : null),
  /* "graph", "inverted" or "sandwich"; the sandwich's callers drawn above, as frames() */
  view: () => ({ view, sandwich: sandFn >= 0 ? fnName[sandFn] : null }),
  setView: (v, name) => { setView(v, name === undefined ? selFn : fnName.indexOf(name)); return view; },
  callers: () => upFrames,
  /* the source panel's blocks: path, why (not shown) or lines {line, self, total, text} */
  source: () => srcShown,
  theme: () => getComputedStyle(document.documentElement).getPropertyValue("--bg").trim(),
};
requestAnimationFrame(() => setTimeout(() => {
  window.pbp.timings.painted = performance.now();
  document.documentElement.dataset.rendered = String(window.pbp.timings.painted);
}, 0));
