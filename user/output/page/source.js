/* page/source.js: source heat: the selected function's lines in its file,
   each with the samples it took (html.c's "src"). */
/* ------------------------------------------------------------ source */

/* The files as read at the end of the run: a process's files are under its
   root (pids), a file by (root, path); a text, or why it is not there. */
const SOURCES = D.src || { why: "this page holds no source files" };
const srcFile = new Map(), groupRoot = new Int32Array(NGROUP).fill(-1);
{
  const rootOfPid = new Map();
  for (let i = 0; SOURCES.pids && i < SOURCES.pids.length; i += 2) rootOfPid.set(SOURCES.pids[i], SOURCES.pids[i + 1]);
  for (const [path, root, t, why] of SOURCES.files || []) srcFile.set(root + "\0" + path, { t, why });
  for (let g = 0; g < NGROUP; g++) if (rootOfPid.has(GROUPS[4 * g])) groupRoot[g] = rootOfPid.get(GROUPS[4 * g]);
}
let srcShown = [];                      /* what the panel shows, for tests (pbp.source) */

/* Function f's samples per line, per process root, over the page's stacks
   as filtered: self where it is the innermost Python frame, total where it
   is anywhere (a line once a stack, however often it recurses there). */
function lineHeat(f) {
  const mask = maskFor($("filter").value), byRoot = new Map(), cur = [], seen = new Set();
  for (let p = 0; p < ST.length; ) {
    const keep = ST[p], nn = ST[p + 1];
    p += 2;
    cur.length = keep;
    for (let k = 0; k < nn; k++) cur.push(ST[p++]);
    const count = ST[p++], g = ST[p++];
    if (!mask[g] || statusHidden(cur, cur.length)) continue;
    let leaf = cur.length - 1, h = null;
    while (leaf >= 0 && kindOf(cur[leaf]) !== PY) leaf--;
    seen.clear();
    for (let k = 0; k <= leaf; k++) {
      const l = cur[k];
      if (fnOf[l] !== f) continue;
      if (!h) {
        h = byRoot.get(groupRoot[g]);
        if (!h) byRoot.set(groupRoot[g], (h = { lines: new Map(), total: 0 }));
        h.total += count;
      }
      const line = LOCS[4 * l + 3];
      let e = h.lines.get(line);
      if (!e) h.lines.set(line, (e = [0, 0]));
      if (!seen.has(line)) { seen.add(line); e[1] += count; }
      if (k === leaf) e[0] += count;
    }
  }
  return byRoot;
}

/* The lines to show: from the function's def (looked for above its first
   sampled line) to the end of its body by indentation, or the sampled
   lines with a little around them. */
function srcRange(lines, name, lo, hi) {
  const short = name.slice(name.lastIndexOf(".") + 1).replace(/[^\w]/g, "\\$&");
  const def = new RegExp(`^(\\s*)(?:async\\s+)?(?:def|class)\\s+${short}\\b`);
  for (let d = Math.min(lo, lines.length); d >= 1 && d > lo - 5000; d--) {
    const m = def.exec(lines[d - 1]);
    if (!m) continue;
    let end = d;
    for (let i = d + 1; i <= lines.length; i++) {
      const t = lines[i - 1];
      if (!t.trim()) continue;
      if (/^\s*/.exec(t)[0].length <= m[1].length) break;
      end = i;
    }
    return [d, Math.max(end, hi)];
  }
  return [Math.max(1, lo - 2), Math.min(lines.length, hi + 2)];
}

const SRC_ROWS = 3000;                  /* lines drawn at most */

function srcBlock(box, file, name, blk) {
  const div = document.createElement("div"), head = document.createElement("div");
  let lo = Infinity, hi = 0, most = 0;
  for (const [line, e] of blk.lines) if (line > 0) { lo = Math.min(lo, line); hi = Math.max(hi, line); most = Math.max(most, e[1]); }
  head.className = "src-head";
  head.textContent = `${file}: ${fmt(blk.total)} samples through ${name}` + (blk.pids.length > 1 || SOURCES.pids.length > 2 ? ` (process ${blk.pids.join(", ")})` : "");
  div.append(head);
  const shown = { path: file, pids: blk.pids, total: blk.total, why: null, lines: [] };
  srcShown.push(shown);
  if (blk.text === null) {
    const why = document.createElement("div");
    why.className = "src-why";
    why.textContent = shown.why = `Source not shown: ${blk.why}.`;
    div.append(why);
    box.append(div);
    return;
  }
  const lines = blk.text.split(/\r?\n/), [from, to] = hi ? srcRange(lines, name, lo, hi) : [1, 0];
  const table = document.createElement("table");
  table.className = "src";
  table.innerHTML = "<thead><tr><th>Line</th><th>Self</th><th>Total</th><th></th></tr></thead>";
  const body = document.createElement("tbody");
  for (let n = from; n <= Math.min(to, from + SRC_ROWS - 1); n++) {
    const e = blk.lines.get(n) || [0, 0], tr = document.createElement("tr"), code = document.createElement("td");
    for (const v of [n, e[0] ? fmt(e[0]) : "", e[1] ? fmt(e[1]) : ""]) {
      const td = document.createElement("td");
      td.textContent = v;
      tr.append(td);
    }
    code.textContent = lines[n - 1] === undefined ? "" : lines[n - 1];
    tr.append(code);
    if (e[1]) tr.style.background = `hsla(12, 95%, 55%, ${(0.12 + 0.6 * e[1] / most).toFixed(3)})`;
    body.append(tr);
    shown.lines.push({ line: n, self: e[0], total: e[1], text: code.textContent });
  }
  table.append(body);
  const scroll = document.createElement("div");
  scroll.className = "src-body";
  scroll.append(table);
  div.append(scroll);
  const off = [...blk.lines].filter(([line, e]) => e[1] && (line < from || line > to || line > lines.length));
  if (off.length) {
    const why = document.createElement("div");
    why.className = "src-why";
    why.textContent = `${off.length} sampled line(s) not in this text (${off.map(([l]) => l).slice(0, 8).join(", ")}): the file changed since the code ran, or the lines are past ${SRC_ROWS} shown.`;
    div.append(why);
  }
  box.append(div);
}

/* The selected function's file, with each line's samples, under the panel's
   filter; one block a distinct text (processes that saw the same file share
   it), or why it is not there. */
function showSource() {
  const box = $("src"), f = selFn, l0 = f >= 0 ? fnLoc[f] : -1;
  srcShown = [];
  box.replaceChildren();
  box.hidden = l0 < 0 || kindOf(l0) !== PY;
  if (box.hidden) return;
  const name = STRS[LOCS[4 * l0 + 1]], file = LOCS[4 * l0 + 2] >= 0 ? STRS[LOCS[4 * l0 + 2]] : "";
  const title = document.createElement("h2");
  title.textContent = "Source lines of the selected function";
  box.append(title);
  if (SOURCES.why) {
    const why = document.createElement("div");
    why.className = "src-why";
    why.textContent = `Source not shown: ${SOURCES.why}.`;
    srcShown.push({ path: file, why: why.textContent, lines: [] });
    box.append(why);
    return;
  }
  const blocks = new Map();
  for (const [root, h] of lineHeat(f)) {
    const e = srcFile.get(root + "\0" + file);
    const why = e ? e.why : `not among the ${fmt(SOURCES.files.length)} hottest files listed`;
    const key = e && e.t >= 0 ? "t" + e.t : "w" + why;
    let b = blocks.get(key);
    if (!b) blocks.set(key, (b = { text: e && e.t >= 0 ? SOURCES.texts[e.t] : null, why, lines: new Map(), total: 0, pids: [] }));
    b.total += h.total;
    for (const [line, v] of h.lines) {
      const c = b.lines.get(line) || [0, 0];
      b.lines.set(line, [c[0] + v[0], c[1] + v[1]]);
    }
    for (let i = 0; i < SOURCES.pids.length; i += 2) if (SOURCES.pids[i + 1] === root) b.pids.push(SOURCES.pids[i]);
  }
  for (const b of [...blocks.values()].sort((x, y) => y.total - x.total)) srcBlock(box, file, name, b);
  if (!blocks.size) {
    const none = document.createElement("div");
    none.className = "src-why";
    none.textContent = "No samples of this function under the filter.";
    box.append(none);
  }
}
