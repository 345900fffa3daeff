/* page/graph.js: drawing the graph on the canvas, its tooltip, the header. */
/* ------------------------------------------------------------ drawing */

const canvas = $("fg");
let ctx = canvas.getContext("2d", { alpha: false });
let zoom = 0, charW = 7, byStatus = false, upRows = 0;   /* upRows: drawing upside down, that many rows */
let dN = [], dX = [], dW = [];          /* what the last render drew, for hovering */

function fill(i) {
  if (matchLoc && i > 0 && matchLoc[loc[i]]) return HIGHLIGHT;
  if (selFn >= 0 && i > 0 && fnOf[loc[i]] === selFn) return HIGHLIGHT;
  if (DIFF) return i > 0 ? diffColour(i) : ROOT_COLOUR;
  if (byStatus) { const s = dominantStatus()[i]; return s >= 0 ? STATUS_COLOUR[s] : ROOT_COLOUR; }
  return i > 0 ? colourOfLoc(loc[i]) : ROOT_COLOUR;
}

/* The root's text: all samples, or in a sandwich the function's, its callers
   (up: the canvas above) or its callees: two roots meet in the middle, and
   "all" twice there read as two more frames of the same name. */
function rootText(up) {
  const n = DIFF ? `${fmt(totB[0])} samples before, ${fmt(totA[0])} after` : `${fmt(tot[0])} samples`;
  return view === "sandwich" ? `${up ? "callers" : "callees"} of ${fnName[sandFn]} (${n})` : `all (${n})`;
}

function label(i, w, up = upRows > 0) {
  const room = Math.floor((w - 6) / charW);
  if (room < 3) return "";
  const t = i > 0 ? text(loc[i]) : rootText(up);
  return t.length <= room ? t : t.slice(0, room - 1) + "\u2026";
}

function box(i, x, w, dim) {
  const y = (upRows ? upRows - 1 - dep[i] : dep[i]) * ROW, s = label(i, w);
  ctx.globalAlpha = dim ? 0.5 : 1;
  ctx.fillStyle = fill(i);
  ctx.fillRect(x, y, w >= 2 ? w - 1 : w, ROW - 1);
  if (s) { ctx.fillStyle = "#15151a"; ctx.fillText(s, x + 3, y + ROW / 2); }
  dN.push(i); dX.push(x); dW.push(w);
}

/* The zoomed node spans the width and its ancestors stay above it (dimmed);
   one pass over its subtree in pre-order, skipping subtrees too narrow to see. */
function render(cv = canvas, up = false) {
  const empty = !(tot[0] > 0);
  if (!up) { $("empty").hidden = !empty; canvas.hidden = empty; }
  dN = []; dX = []; dW = [];
  if (empty) return;
  const dpr = window.devicePixelRatio || 1, W = Math.max(300, $("chart").clientWidth - 32);
  const maxRows = Math.floor(32000 / (ROW * dpr)), rows = Math.min(mdep[zoom] + 1, maxRows);
  ctx = cv.getContext("2d", { alpha: false });
  upRows = up ? rows : 0;
  cv.width = Math.round(W * dpr);
  cv.height = Math.round(rows * ROW * dpr);
  cv.style.width = W + "px";
  cv.style.height = rows * ROW + "px";
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = getComputedStyle(document.documentElement).getPropertyValue("--bg").trim() || "#fff";
  ctx.fillRect(0, 0, W, rows * ROW);
  ctx.font = FONT;
  ctx.textBaseline = "middle";
  charW = ctx.measureText("MMMMMMMMMM").width / 10;
  /* not a sandwich: its callers' canvas has no statuses to colour by */
  byStatus = $("colour").value === "status" && statusName.size > 0 && view !== "sandwich";
  for (let a = par[zoom]; a >= 0; a = par[a]) box(a, 0, W, true);
  box(zoom, 0, W, false);
  ctx.globalAlpha = 1;
  const scale = W / tot[zoom], e = end[zoom];
  xs[zoom] = 0; acc[zoom] = 0;
  for (let i = zoom + 1; i < e; ) {
    const q = par[i], w = tot[i] * scale, x = xs[q] + acc[q];
    acc[q] += w;
    if (w < MIN_W || dep[i] >= rows) { i = end[i]; continue; }
    xs[i] = x; acc[i] = 0;
    box(i, x, w, false);
    i++;
  }
  upRows = 0;
  if (!up) crumbs();
  if (!up && view === "sandwich") repaintUp();
}

function crumbs() {
  $("crumbs").textContent = zoom && DIFF
    ? `Zoomed into ${text(loc[zoom])}: ${pct(share(totB[zoom], totB[0]))} before, ${pct(share(totA[zoom], totA[0]))} after. Reset zoom or click a frame above it to go back.`
    : zoom
    ? `Zoomed into ${text(loc[zoom])}: ${fmt(tot[zoom])} samples, ${pct(tot[zoom] / tot[0])}. Reset zoom or click a frame above it to go back.`
    : "Click a frame to zoom into it; hover for details.";
}

function nodeAt(px, py) {
  const row = Math.floor(py / ROW);
  for (let k = 0; k < dN.length; k++)
    if (dep[dN[k]] === row && px >= dX[k] && px < dX[k] + dW[k]) return dN[k];
  return -1;
}

/* ------------------------------------------------------------ tooltip */

const tip = $("tip");

function tipLine(s, cls) {
  const d = document.createElement("div");
  if (cls) d.className = cls;
  d.textContent = s;
  tip.append(d);
}

function diffTip(i) {
  tipLine(`before: ${fmt(totB[i])} samples, ${pct(share(totB[i], totB[0]))}`);
  tipLine(`after: ${fmt(totA[i])} samples, ${pct(share(totA[i], totA[0]))}`);
  tipLine(`change: ${signed(delta(i))}`);
  if (i > 0 && (selfB[i] || selfA[i]))
    tipLine(`self: ${pct(share(selfB[i], totB[0]))} before, ${pct(share(selfA[i], totA[0]))} after`);
}

function showTip(i, cx, cy) {
  const v = tot[i], all = tot[0];
  tip.replaceChildren();
  tipLine(i > 0 ? text(loc[i]) : view === "sandwich" ? rootText(false) : "all samples", "t");
  if (DIFF) diffTip(i); else {
  const of = view === "sandwich" ? `those through ${fnName[sandFn]}` : $("filter").value === "all" && !hideStatus.size ? "all" : "this filter";
  tipLine(`${fmt(v)} samples, ${pct(v / all)} of ${of}`);
  if (zoom && i > zoom && i < end[zoom]) tipLine(`${pct(v / tot[zoom])} of the zoomed frame`);
  if (self[i] > 0 && i > 0) tipLine(`self: ${fmt(self[i])} samples (${pct(self[i] / all)})`);
  if (META.hz) tipLine(`\u2248 ${(v / META.hz).toFixed(v / META.hz < 10 ? 2 : 1)} s at ${META.hz} Hz`);
  if (byStatus && dominant[i] >= 0) tipLine(`mostly ${statusName.get(dominant[i])}`);
  }
  tip.style.display = "block";
  const w = tip.offsetWidth, h = tip.offsetHeight;
  tip.style.left = (cx + 14 + w > innerWidth - 4 ? Math.max(4, cx - w - 14) : cx + 14) + "px";
  tip.style.top = (cy + 18 + h > innerHeight - 4 ? Math.max(4, cy - h - 10) : cy + 18) + "px";
}

/* ------------------------------------------------------------ header */

function info() {
  const box = $("info"), shown = tot[0], ms = META.duration_ms;
  const items = [["mode", META.mode], ["samples", shown === META.total ? fmt(shown) : `${fmt(shown)} of ${fmt(META.total)}`],
    ["duration", ms > 0 ? `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s` : "unknown"],
    ["rate", META.hz ? `${META.hz} Hz` : "unknown"], ["stacks", fmt(META.stacks)]];
  if (DIFF) items.splice(1, 2, ["before", `${fmt(totB[0])} of ${fmt(DIFF.total[0])} samples`],
                         ["after", `${fmt(totA[0])} of ${fmt(DIFF.total[1])} samples`],
                         ["colours", "red grew, blue shrank (share of each profile's samples)"]);
  if (META.start_ms > 0) items.push(["started", new Date(META.start_ms).toISOString().slice(0, 19).replace("T", " ") + " UTC"]);
  box.replaceChildren();
  for (const [k, v] of items) {
    const s = document.createElement("span"), b = document.createElement("b");
    s.id = "info-" + k;
    b.textContent = v;
    s.append(k + " ", b);
    box.append(s);
  }
}

