/* page/tree.js: the call tree built from the stacks; thread filter, statuses, search. */
/* ------------------------------------------------------------ the tree */

/* Stacks come sorted (see flame.h): a stack shares the nodes of the one
   before it up to their common prefix, and every deeper frame is a new node.
   Nodes are therefore numbered in pre-order: a subtree is the index range
   [i, end[i]) and a node's children are i+1, end[i+1], ... in name order. */
let cap = 1, maxLen = 0;
for (let p = 0; p < ST.length; p += ST[p + 1] + 4) {
  cap += ST[p + 1];
  maxLen = Math.max(maxLen, ST[p] + ST[p + 1]);
}
let loc, par, dep, end, mdep, tot, self, xs, acc;   /* xs, acc: layout scratch */
/* Diff mode: samples before and after under each node (tot and self are then shares, see diffWeights). */
let totB = null, totA = null, selfB = null, selfA = null;
/* Room for n nodes (a view's tree can have more nodes than the page's). */
function grow(n) {
  if (loc && n <= loc.length) return;
  const I = () => new Int32Array(n), F = () => new Float64Array(n);
  loc = I(); par = I(); dep = I(); end = I(); mdep = I();
  tot = F(); self = F(); xs = F(); acc = F();
  if (DIFF) { totB = F(); totA = F(); selfB = F(); selfA = F(); }
}
grow(cap);
let N = 1, maxDelta = 0;

/* Merge the stacks whose group passes mask; from: the stacks as the page
   came (ST) or as a view made them (views.js), in the same encoding. */
function build(mask, from = { st: ST, sb: SB, sa: SA, own: true }) {
  const ST = from.st, SB = from.sb, SA = from.sa;
  if (from.nodes) grow(from.nodes);
  const cur = new Int32Array(maxLen), path = new Int32Array(maxLen + 1);
  let n = 1, lastLen = -1, runMin = Infinity, si = 0;
  loc[0] = -1; par[0] = -1; dep[0] = 0; tot[0] = 0; self[0] = 0;
  if (DIFF) { totB[0] = totA[0] = selfB[0] = selfA[0] = 0; }
  for (let p = 0; p < ST.length; ) {
    const keep = ST[p], nn = ST[p + 1], len = keep + nn;
    p += 2;
    for (let k = keep; k < len; k++) cur[k] = ST[p++];
    const count = ST[p++], g = ST[p++], s = si++;
    /* common prefix with the last stack taken = least "keep" since then */
    if (keep < runMin) runMin = keep;
    if (!mask[g] || (from.own && statusHidden(cur, len))) continue;
    for (let d = lastLen < 0 ? 0 : Math.min(runMin, lastLen); d < len; d++) {
      loc[n] = cur[d]; par[n] = path[d]; dep[n] = d + 1; tot[n] = 0; self[n] = 0;
      if (DIFF) { totB[n] = totA[n] = selfB[n] = selfA[n] = 0; }
      path[d + 1] = n++;
    }
    for (let d = 0; d <= len; d++) tot[path[d]] += count;
    self[path[len]] += count;
    if (DIFF) {
      for (let d = 0; d <= len; d++) { totB[path[d]] += SB[s]; totA[path[d]] += SA[s]; }
      selfB[path[len]] += SB[s]; selfA[path[len]] += SA[s];
    }
    lastLen = len;
    runMin = Infinity;
  }
  for (let i = 0; i < n; i++) { end[i] = i + 1; mdep[i] = dep[i]; }
  for (let i = n - 1; i > 0; i--) {
    const q = par[i];
    if (end[i] > end[q]) end[q] = end[i];
    if (mdep[i] > mdep[q]) mdep[q] = mdep[i];
  }
  N = n;
  dominant = null;
  if (DIFF) diffWeights(n);
}

/* Diff mode: a frame is as wide as the mean of its shares of the two
   profiles (each of its own total: a function that vanished still shows),
   and coloured by how its share changed. */
const share = (v, all) => (all > 0 ? v / all : 0);
const delta = (i) => share(totA[i], totA[0]) - share(totB[i], totB[0]);

function diffWeights(n) {
  maxDelta = 0;
  for (let i = 0; i < n; i++) {
    tot[i] = (share(totB[i], totB[0]) + share(totA[i], totA[0])) / 2;
    self[i] = (share(selfB[i], totB[0]) + share(selfA[i], totA[0])) / 2;
    if (i > 0) maxDelta = Math.max(maxDelta, Math.abs(delta(i)));
  }
}

/* Red grew, blue shrank, the deeper the more (against the largest change). */
function diffColour(i) {
  const d = delta(i), t = maxDelta > 0 ? Math.min(1, Math.abs(d) / maxDelta) : 0;
  if (t < 0.01) return "hsl(0,0%,86%)";
  return `hsl(${d > 0 ? 0 : 215},${Math.round(45 + 40 * t)}%,${Math.round(88 - 36 * t)}%)`;
}

const signed = (f) => (f > 0 ? "+" : f < 0 ? "\u2212" : "\u00b1") + (100 * Math.abs(f)).toFixed(Math.abs(f) < 0.001 && f ? 3 : 1) + " pt";

/* Status colouring: each node takes the colour of the status with the most
   samples under it. Computed on first use only: N counters a status. */
let dominant = null;
function dominantStatus() {
  if (dominant) return dominant;
  const S = STATUS_COLOUR.length, c = new Float64Array(N * S);
  dominant = new Int8Array(N).fill(-1);
  for (let i = N - 1; i >= 0; i--) {        /* children before their parent */
    const l = loc[i];
    if (l >= 0 && kindOf(l) === STATUS) c[i * S + LOCS[4 * l + 3]] += self[i];
    let best = -1, most = 0;
    for (let s = 0; s < S; s++) {
      const v = c[i * S + s];
      if (v > most) { most = v; best = s; }
      if (i > 0) c[par[i] * S + s] += v;
    }
    dominant[i] = best;
  }
  return dominant;
}

/* ------------------------------------------------------------ filter */

const groupTotal = new Float64Array(NGROUP);
for (let p = 0; p < ST.length; p += ST[p + 1] + 4) groupTotal[ST[p + ST[p + 1] + 3]] += ST[p + ST[p + 1] + 2];

function addOptions(sel, title, items) {
  if (!items.length) return;
  const og = document.createElement("optgroup");
  og.label = title;
  items.sort((a, b) => b[2] - a[2]);
  for (const [value, label, n] of items) og.append(new Option(`${label} (${pct(n / META.total)})`, value));
  sel.append(og);
}

/* Options from the stack tags: processes (when there are several) and
   threads, each named by its root label frame or the thread's name. */
function setupFilter() {
  const sel = $("filter"), procs = new Map(), threads = [];
  for (let g = 0; g < NGROUP; g++) {
    const pid = GROUPS[4 * g], tid = GROUPS[4 * g + 1], tl = GROUPS[4 * g + 2], pl = GROUPS[4 * g + 3];
    if (pid) {
      const pr = procs.get(pid) || ["p" + pid, pl >= 0 ? STRS[pl] : "process " + pid, 0];
      pr[2] += groupTotal[g];
      procs.set(pid, pr);
    }
    if (tid) threads.push(["g" + g, tl >= 0 ? STRS[tl] : "thread " + tid, groupTotal[g]]);
  }
  sel.append(new Option("all threads", "all"));
  addOptions(sel, "Processes", procs.size > 1 ? [...procs.values()] : []);
  addOptions(sel, "Threads", threads);
  $("filter-box").hidden = sel.options.length < 2;
}

function maskFor(value) {
  const m = new Uint8Array(NGROUP);
  for (let g = 0; g < NGROUP; g++) {
    m[g] = value === "all" ? 1
      : value[0] === "p" ? +(GROUPS[4 * g] === +value.slice(1))
      : +(g === +value.slice(1));
  }
  return m;
}

/* ------------------------------------------------------------ statuses */

const statusName = new Map();           /* status -> its label, for those present */
for (let l = 0; l < NLOC; l++)
  if (kindOf(l) === STATUS && !statusName.has(LOCS[4 * l + 3])) statusName.set(LOCS[4 * l + 3], STRS[LOCS[4 * l + 1]]);

/* The statuses whose samples the filter leaves out (their legend boxes unticked). */
const hideStatus = new Set();
const statusHidden = (fr, len) => hideStatus.size > 0 && len > 0 && kindOf(fr[len - 1]) === STATUS &&
  hideStatus.has(LOCS[4 * fr[len - 1] + 3]);

function legend() {
  const box = $("legend"), share = new Float64Array(STATUS_COLOUR.length);
  box.hidden = statusName.size === 0;
  if (box.hidden) return;
  for (let i = 1; i < N; i++) if (kindOf(loc[i]) === STATUS) share[LOCS[4 * loc[i] + 3]] += self[i];
  box.replaceChildren();
  for (const [s, name] of [...statusName].sort((a, b) => a[0] - b[0])) {
    const item = document.createElement("label"), sw = document.createElement("i"), on = document.createElement("input");
    item.className = "item";
    item.dataset.status = name;
    item.title = "Untick to leave this status's samples out of the graph and the table";
    on.type = "checkbox";
    on.checked = !hideStatus.has(s);
    on.dataset.s = s;
    sw.className = "sw";
    sw.style.background = STATUS_COLOUR[s] || ROOT_COLOUR;
    item.append(on, sw, `${name} ${on.checked ? (tot[0] ? pct(share[s] / tot[0]) : "-") : "left out"}`);
    box.append(item);
  }
}

/* ------------------------------------------------------------ search */

let matchLoc = null, searchTest = null;

function setSearch(q) {
  let test = null;
  $("matched").textContent = "";
  const re = /^\/(.+)\/$/.exec(q);
  if (re) {
    try { const r = new RegExp(re[1], "i"); test = (s) => r.test(s); }
    catch (e) { $("matched").textContent = "invalid regular expression"; }
  } else if (q) {
    const lq = q.toLowerCase();
    test = (s) => s.toLowerCase().includes(lq);
  }
  matchLoc = null;
  searchTest = test;
  if (test) {
    matchLoc = new Uint8Array(NLOC);
    for (let l = 0; l < NLOC; l++) matchLoc[l] = test(text(l)) ? 1 : 0;
  }
  showMatched();
  fnDraw();
  render();
  saveView();
}

/* A matched frame inside a matched frame (recursion) is not counted twice:
   a match's whole subtree is skipped. */
function showMatched() {
  if (!matchLoc) return;
  let sum = 0, sumB = 0, sumA = 0;
  for (let i = 1; i < N; ) {
    if (matchLoc[loc[i]]) { sum += tot[i]; if (DIFF) { sumB += totB[i]; sumA += totA[i]; } i = end[i]; } else i++;
  }
  if (DIFF) {
    $("matched").textContent = `Matched: ${pct(share(sumB, totB[0]))} before, ${pct(share(sumA, totA[0]))} after`;
    return;
  }
  $("matched").textContent = `Matched: ${tot[0] ? pct(sum / tot[0]) : "0.0%"} (${fmt(sum)} of ${fmt(tot[0])} samples)`;
}

