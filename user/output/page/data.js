/* page/data.js: the profile parsed and decoded; frame texts and colours. */
const t0 = performance.now();
const D = JSON.parse(document.getElementById("pbp-data").textContent);
const META = D.meta, STRS = D.strs, LOCS = D.locs, GROUPS = D.groups, ST = decodeNums(D.stacks);
/* pybpfprof diff: each stack's samples in the profile before and after (html.c's "diff"). */
const DIFF = D.diff || null;
const SB = DIFF ? decodeNums(DIFF.before) : null, SA = DIFF ? decodeNums(DIFF.after) : null;
const tParsed = performance.now();
const NLOC = LOCS.length >> 2, NGROUP = GROUPS.length >> 2;
const PY = 0, STATUS = 3;               /* enum loc_kind; 1 and 2 are thread and process labels */
/* Indexed by enum pbp_status; html.c writes them from the table in status.c. */
const STATUS_COLOUR = D.status_colour;
const LABEL_COLOUR = ["", "#c8cbd6", "#b5b9ca"];
const ROOT_COLOUR = "#dcdce4", HIGHLIGHT = getComputedStyle(document.documentElement).getPropertyValue("--hl").trim();
const ROW = 18, MIN_W = 0.3;            /* px: a frame narrower than MIN_W is not drawn */
const FONT = '12px "DejaVu Sans Mono", "Liberation Mono", Menlo, Consolas, monospace';
const $ = (id) => document.getElementById(id);
const fmt = (n) => n.toLocaleString("en-US");
const pct = (f) => (100 * f).toFixed(f > 0 && f < 0.001 ? 3 : 1) + "%";

/* The stacks' numbers: 5 bits a character, least significant first, a
   character from the upper half of the alphabet saying more follow (put_num
   in html.c). Counted first so the result is one typed array. */
function decodeNums(s) {
  const DIGITS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";
  const val = new Int8Array(128).fill(-1);
  for (let i = 0; i < 64; i++) val[DIGITS.charCodeAt(i)] = i;
  let n = 0;
  for (let i = 0; i < s.length; i++) if (val[s.charCodeAt(i) & 127] < 32) n++;
  const out = new Float64Array(n);
  for (let i = 0, k = 0; k < n; k++) {
    let v = 0, m = 1, c;
    do { c = val[s.charCodeAt(i++) & 127]; v += (c & 31) * m; m *= 32; } while (c >= 32);
    out[k] = v;
  }
  return out;
}

/* ------------------------------------------------------------ locations */

const locText = new Array(NLOC), locColour = new Array(NLOC);
const kindOf = (l) => LOCS[4 * l];

/* The frame's text as `pybpfprof` writes it (loc_format in collapsed.c). */
function text(l) {
  if (l < 0) return "all";
  let t = locText[l];
  if (t === undefined) {
    const name = STRS[LOCS[4 * l + 1]];
    if (kindOf(l) !== PY) {
      t = name;
    } else {
      const file = STRS[LOCS[4 * l + 2]], line = LOCS[4 * l + 3];
      t = line >= 0 ? `${name} (${file}:${line})` : `${name} (${file})`;
    }
    locText[l] = t;
  }
  return t;
}

function hash(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/* Where code comes from picks the hue family (warm: the application, green:
   installed packages, blue: the standard library), the package or file the
   hue, so one module reads as one colour and neighbours still differ. */
function pyColour(name, file) {
  const pkg = /[\/\\](?:site|dist)-packages[\/\\]([^\/\\]+)/.exec(file);
  let base = 0, span = 50, key = file;
  if (pkg) { base = 85; span = 75; key = pkg[1].replace(/\.py$/, ""); }
  else if (/[\/\\]lib[\/\\]python\d/.test(file) || file.startsWith("<frozen")) { base = 195; span = 40; }
  const h = hash(key), n = hash(name);
  return `hsl(${base + h % span},${58 + n % 24}%,${62 + (n >>> 8) % 12}%)`;
}

function colourOfLoc(l) {
  let c = locColour[l];
  if (c === undefined) {
    const k = kindOf(l);
    c = k === PY ? pyColour(STRS[LOCS[4 * l + 1]], STRS[LOCS[4 * l + 2]])
      : k === STATUS ? STATUS_COLOUR[LOCS[4 * l + 3]] || ROOT_COLOUR
      : LABEL_COLOUR[k] || ROOT_COLOUR;
    locColour[l] = c;
  }
  return c;
}

