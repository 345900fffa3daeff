/* page/views.js: the inverted (bottom-up) and sandwich views, each a tree
   built from stacks made out of the page's own. */
/* ------------------------------------------------------------ views */

/* view: "graph", "inverted" or "sandwich" (of function sandFn: its callers
   drawn upside down above, its callees below). */
let view = "graph", sandFn = -1, upFrames = [];
const upCanvas = $("fg-up");

/* A function's first location: the one node a sandwich starts from, whatever line. */
const fnLoc = new Int32Array(fnName.length).fill(-1);
for (let l = 0; l < NLOC; l++) if (fnOf[l] >= 0 && fnLoc[fnOf[l]] < 0) fnLoc[fnOf[l]] = l;

/* The page's stacks each through make(frames) (frames, or null: left out),
   sorted and encoded as the page's are, for build(). */
function derive(make) {
  const out = [], cur = [];
  let nodes = 1;
  for (let p = 0, s = 0; p < ST.length; s++) {
    const keep = ST[p], nn = ST[p + 1];
    p += 2;
    cur.length = keep;
    for (let k = 0; k < nn; k++) cur.push(ST[p++]);
    const count = ST[p++], g = ST[p++];
    if (statusHidden(cur, cur.length)) continue;
    const fr = make(cur);
    if (fr) { out.push({ fr, count, g, s }); nodes += fr.length; }
  }
  out.sort((a, b) => {
    const n = Math.min(a.fr.length, b.fr.length);
    for (let k = 0; k < n; k++) if (a.fr[k] !== b.fr[k]) return a.fr[k] - b.fr[k];
    return a.fr.length - b.fr.length;
  });
  const st = [], sb = [], sa = [];
  let prev = [];
  for (const { fr, count, g, s } of out) {
    let keep = 0;
    while (keep < fr.length && keep < prev.length && fr[keep] === prev[keep]) keep++;
    st.push(keep, fr.length - keep);
    for (let k = keep; k < fr.length; k++) st.push(fr[k]);
    st.push(count, g);
    if (DIFF) { sb.push(SB[s]); sa.push(SA[s]); }
    prev = fr;
  }
  return { st, sb, sa, nodes };
}

/* Bottom-up: the Python frames leaf first (a stack without any: its
   status), then the thread and process labels, then the status, kept last:
   under each caller chain its samples split by status, which colouring by
   status reads as in the graph. */
function inverted(fr) {
  const fns = [], labels = [];
  let status = -1;
  for (const l of fr) {
    const k = kindOf(l);
    if (k === PY) fns.push(l); else if (k === STATUS) status = l; else labels.push(l);
  }
  const out = (fns.length ? fns : status >= 0 ? [status] : []).reverse().concat(labels.reverse());
  if (fns.length && status >= 0) out.push(status);
  return out;
}

/* A stack through function f, from its outermost call of f (so a recursive
   stack counts once): the callers from f up to the root, or the callees
   from f down to the leaf, f itself as its first location. */
const outermost = (fr, f) => fr.findIndex((l) => fnOf[l] === f);
function callersOf(f) {
  return (fr) => { const i = outermost(fr, f); return i < 0 ? null : [fnLoc[f]].concat(fr.slice(0, i).reverse()); };
}
function calleesOf(f) {
  return (fr) => { const i = outermost(fr, f); return i < 0 ? null : [fnLoc[f]].concat(fr.slice(i + 1)); };
}

/* The tree for the filter and view. The table, legend and header always
   count the page's own stacks; a sandwich's callers are drawn here, once. */
function rebuild(own = true) {
  const mask = maskFor($("filter").value);
  if (own || view === "graph") build(mask);
  if (own) { info(); legend(); fnTable(); showSource(); }
  zoom = 0;                             /* node numbers changed */
  upFrames = [];
  upCanvas.hidden = $("sand-title").hidden = view !== "sandwich";
  if (view === "inverted") build(mask, derive(inverted));
  if (view === "sandwich") {
    build(mask, derive(callersOf(sandFn)));
    render(upCanvas, true);
    const rows = Math.round(upCanvas.height / (window.devicePixelRatio || 1) / ROW);
    upFrames = dN.map((i, k) => ({ text: i > 0 ? text(loc[i]) : rootText(true), depth: dep[i], samples: tot[i],
                                   x: dX[k], w: dW[k], y: (rows - 1 - dep[i]) * ROW, l: loc[i], label: label(i, dW[k], true),
                                   base: i === 0 ? ROOT_COLOUR : DIFF ? diffColour(i) : colourOfLoc(loc[i]) }));
    $("sand-title").textContent = `Sandwich of ${fnName[sandFn]}: its callers above (${fmt(tot[0])} samples), its callees below. Press the button again to leave.`;
    build(mask, derive(calleesOf(sandFn)));
  }
  $("invert").setAttribute("aria-pressed", String(view === "inverted"));
  $("sandwich").setAttribute("aria-pressed", String(view === "sandwich"));
  showMatched();
}

/* The callers drawn again from what was drawn, as the search and the
   selection light frames up (their tree is gone: the callees' is built). */
function repaintUp() {
  const c = upCanvas.getContext("2d", { alpha: false });
  for (const u of upFrames) {
    const lit = u.l >= 0 && ((matchLoc && matchLoc[u.l]) || (selFn >= 0 && fnOf[u.l] === selFn));
    c.fillStyle = lit ? HIGHLIGHT : u.base;
    c.fillRect(u.x, u.y, u.w >= 2 ? u.w - 1 : u.w, ROW - 1);
    if (u.label) { c.fillStyle = "#15151a"; c.fillText(u.label, u.x + 3, u.y + ROW / 2); }
  }
}

/* Switch view (to the graph when asked for the one shown). */
function setView(v, f = selFn) {
  if (v === "sandwich" && f < 0) return;
  view = v === view && (v !== "sandwich" || f === sandFn) ? "graph" : v;
  sandFn = view === "sandwich" ? f : -1;
  rebuild(false);                       /* the filter is the same: table, legend and header too */
  render();
  saveView();
}

upCanvas.addEventListener("mousemove", (ev) => {
  const fr = upFrames.find((u) => ev.offsetY >= u.y && ev.offsetY < u.y + ROW && ev.offsetX >= u.x && ev.offsetX < u.x + u.w);
  if (!fr) { tip.style.display = "none"; return; }
  tip.replaceChildren();
  tipLine(fr.text, "t");
  tipLine(`${fmt(fr.samples)} samples through ${fnName[sandFn]}`);
  tip.style.display = "block";
  tip.style.left = ev.clientX + 14 + "px";
  tip.style.top = ev.clientY + 18 + "px";
});
upCanvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
$("legend").addEventListener("change", (ev) => {
  const s = +ev.target.dataset.s;
  if (ev.target.checked) hideStatus.delete(s); else hideStatus.add(s);
  rebuild();
  render();
  saveView();
});
$("invert").addEventListener("click", () => setView("inverted"));
$("sandwich").addEventListener("click", () => setView("sandwich"));
