/* page/table.js: the function table (self, total; diff: before, after, change). */
/* ------------------------------------------------------------ functions */

/* A function is a name in a file, whatever line a sample was at: the
   table's rows (statuses too, thread and process labels not). In a total a
   function counts once per stack, however often it recurses in it. */
const fnOf = new Int32Array(NLOC).fill(-1), fnName = [];
{
  const ids = new Map();
  for (let l = 0; l < NLOC; l++) {
    const k = kindOf(l), name = STRS[LOCS[4 * l + 1]], file = STRS[LOCS[4 * l + 2]];
    if (k !== PY && k !== STATUS) continue;
    const key = k === PY && file ? `${name} (${file})` : name;
    if (!ids.has(key)) { ids.set(key, fnName.length); fnName.push(key); }
    fnOf[l] = ids.get(key);
  }
}
const FN_ROWS = 500;                    /* rows drawn at most: search narrows the rest */
let selFn = -1, fnRows = [], fnShown = [], fnSort = DIFF ? "change" : "self", fnAsc = false;

/* Per function over the tree as filtered: total and self, in the units of tot
   (and before/after samples). Self is the innermost Python frame's, as in
   the summary, pstats, pprof and the inverted view: a status leaf under it
   says what the thread was doing there and takes none; a status has self
   only in stacks without a Python frame. */
function fnStats() {
  const F = fnName.length, onPath = new Int32Array(F), path = [], ownBy = new Int32Array(N).fill(-1);
  const T = new Float64Array(F), S = new Float64Array(F);
  const TB = new Float64Array(DIFF ? F : 0), TA = new Float64Array(DIFF ? F : 0);
  for (let i = 1; i < N; i++) {
    while (path.length && end[path[path.length - 1]] <= i) {
      const f = fnOf[loc[path.pop()]];
      if (f >= 0) onPath[f]--;
    }
    const f = fnOf[loc[i]], py = kindOf(loc[i]) === PY;
    ownBy[i] = py || ownBy[par[i]] < 0 ? f : ownBy[par[i]];
    path.push(i);
    if (ownBy[i] >= 0) S[ownBy[i]] += self[i];
    if (f < 0) continue;
    if (!onPath[f]) { T[f] += tot[i]; if (DIFF) { TB[f] += totB[i]; TA[f] += totA[i]; } }
    onPath[f]++;
  }
  const rows = [];
  for (let f = 0; f < F; f++) {
    if (!T[f]) continue;
    rows.push(DIFF ? { f, before: share(TB[f], totB[0]), after: share(TA[f], totA[0]), change: share(TA[f], totA[0]) - share(TB[f], totB[0]) }
      : { f, self: S[f], total: T[f] });
  }
  return rows;
}

/* Key, heading, what the heading means. Diff's are short: its columns are
   three, and their width would come out of the names'. */
const FN_COLS = DIFF
  ? [["name", "Function"], ["before", "Before", "Total share before"], ["after", "After", "Total share after"],
     ["change", "Change", "Total share after less before, in percentage points"]]
  : [["name", "Function"], ["self", "Self"], ["total", "Total"]];

function fnCell(r, key) {
  const td = document.createElement("td");
  if (key === "name") { td.textContent = fnName[r.f]; td.title = fnName[r.f]; }
  else if (key === "change") { td.textContent = signed(r.change); td.className = r.change > 0 ? "grew" : r.change < 0 ? "shrank" : ""; }
  else if (DIFF) td.textContent = pct(r[key]);
  else td.textContent = `${fmt(r[key])} (${pct(r[key] / (fnAll || 1))})`;
  return td;
}

function fnHead() {
  const head = $("fns-head");
  head.replaceChildren();
  for (const [key, title, what] of FN_COLS) {
    const th = document.createElement("th");
    th.textContent = title;
    if (what) th.title = what;
    th.dataset.key = key;
    if (key === fnSort) th.setAttribute("aria-sort", fnAsc ? "ascending" : "descending");
    th.addEventListener("click", () => {
      fnAsc = fnSort === key ? !fnAsc : key === "name";
      fnSort = key;
      fnHead();
      fnDraw();
    });
    head.append(th);
  }
}

/* The rows that pass the search, sorted; a change sorts by its size, grown first on a tie. */
function fnDraw() {
  const dir = fnAsc ? 1 : -1, key = fnSort;
  const val = (r) => (key === "change" ? Math.abs(r.change) + r.change * 1e-9 : r[key]);
  let rows = searchTest ? fnRows.filter((r) => searchTest(fnName[r.f])) : fnRows.slice();
  rows.sort(key === "name" ? (a, b) => dir * fnName[a.f].localeCompare(fnName[b.f]) : (a, b) => dir * (val(a) - val(b)));
  fnShown = rows.slice(0, FN_ROWS);
  const body = $("fns-body");
  body.replaceChildren();
  for (const r of fnShown) {
    const tr = document.createElement("tr");
    tr.dataset.f = r.f;
    if (r.f === selFn) tr.className = "sel";
    for (const [k] of FN_COLS) tr.append(fnCell(r, k));
    body.append(tr);
  }
  $("fns-more").textContent = rows.length > FN_ROWS ? `${fmt(rows.length - FN_ROWS)} more functions: search to narrow` : "";
}

/* Over the tree as built from the page's stacks (views.js keeps it so). */
let fnAll = 0;                          /* the samples the table's shares are of */
function fnTable() {
  fnRows = fnStats();
  fnAll = tot[0];
  $("fns-title").textContent = DIFF ? "Functions: share of each profile's samples" : "Functions";
  fnDraw();
}

/* A row picked: its function's frames are highlighted in the graph (again: none). */
function selectFn(f) {
  markFn(f === selFn ? -1 : f);
  render();
}

/* The function's row marked (and shown); f -1: none. */
function markFn(f) {
  selFn = f;
  saveView();
  showSource();
  for (const tr of $("fns-body").children) {
    tr.className = +tr.dataset.f === selFn ? "sel" : "";
    if (tr.className) tr.scrollIntoView({ block: "nearest" });
  }
}

$("fns-body").addEventListener("click", (ev) => {
  const tr = ev.target.closest("tr");
  if (tr) selectFn(+tr.dataset.f);
});
fnHead();

