"""The documentation against the program: the user guide (docs/*.md), the
man page and the bash completion must name the options each subcommand's
--help lists, and no others; the exit codes must be enum pbp_exit's; the man
page must render cleanly; README stays short and every link of README and
docs/ leads somewhere; and `make demo`, the first thing a newcomer runs,
must work."""

import os
import re
import subprocess
import time

import pytest

from conftest import PYBPFPROF, REPO

README = os.path.join(REPO, "README.md")
DOCS = os.path.join(REPO, "docs")
# The guide's pages on running pybpfprof: together they name every option.
USAGE_PAGES = ["usage.md", "commands.md", "asyncio.md", "native.md", "agent.md"]
README_MAX_LINES = 400
MANPAGE = os.path.join(REPO, "pybpfprof.1")
# One page per subcommand besides the main one, as git's and perf's.
SUB_MANPAGES = {sub: os.path.join(REPO, "pybpfprof-%s.1" % sub) for sub in ["top", "dump", "convert", "diff", "agent"]}
COMPLETION = os.path.join(REPO, "scripts", "pybpfprof.bash-completion")
HEADER = os.path.join(REPO, "user", "core", "errors.h")
ERRORS_C = os.path.join(REPO, "user", "core", "errors.c")

SUBCOMMANDS = ["record", "top", "dump", "convert", "diff", "agent"]    # "record": no subcommand word
ARGP_STANDARD = {"help", "usage", "version"}    # argp adds these to every subcommand
LONGOPT = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def help_text(sub):
    if not os.access(PYBPFPROF, os.X_OK):
        pytest.fail("build/pybpfprof is not built (make all)", pytrace=False)
    argv = [PYBPFPROF] + ([] if sub == "record" else [sub]) + ["--help"]
    r = subprocess.run(argv, capture_output=True, universal_newlines=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


def help_options(sub):
    """Long options of a subcommand, from the option column of its --help."""
    opts = set()
    for line in help_text(sub).splitlines():
        m = re.match(r"^\s+(?:-\S, )?--([a-z][a-z0-9-]*)", line)
        if m:
            opts.add(m.group(1))
    assert {"help", "usage", "version"} <= opts, "cannot parse --help of %s" % sub
    return opts


@pytest.fixture(scope="module")
def options():
    return {sub: help_options(sub) for sub in SUBCOMMANDS}


# --- roff ----------------------------------------------------------------------

def roff_plain(text):
    """Roff source -> words: escapes that matter here undone, comments dropped."""
    text = re.sub(r"(?m)^\.\\\".*$", "", text)
    text = re.sub(r"\\f[BIRP]|\\f\(..|\\f\[[^]]*\]", "", text)
    text = text.replace(r"\-", "-").replace(r"\(lq", '"').replace(r"\(rq", '"')
    return text


def man_sections(page=MANPAGE):
    """{".SH title": body} of a man page, roff source."""
    sections, title = {}, None
    for line in read(page).splitlines():
        if line.startswith(".SH "):
            title = line[4:].strip().strip('"')
            sections[title] = []
        elif title is not None:
            sections[title].append(line)
    return {k: "\n".join(v) for k, v in sections.items()}


# --- markdown --------------------------------------------------------------------

def doc_pages():
    return sorted(os.path.join(DOCS, f) for f in os.listdir(DOCS) if f.endswith(".md"))


def guide(pages=None):
    """The pages of docs/ (those named, or all), one text: each starts with
    its own "# " title, so no section runs from one page into the next."""
    paths = [os.path.join(DOCS, p) for p in pages] if pages else doc_pages()
    return "\n".join(read(p) for p in paths)


def md_section(text, heading):
    """The body under a heading (any level), up to the next heading of the same or a higher level."""
    m = re.search(r"(?m)^(#+) %s[ \t]*$" % re.escape(heading), text)
    assert m, "the documentation has no heading %r" % heading
    level = len(m.group(1))
    end = re.search(r"(?m)^#{1,%d} " % level, text[m.end():])
    return text[m.end():m.end() + end.start() if end else len(text)]


# --- (a) options -------------------------------------------------------------------

def man_options_text(sub):
    """Where a subcommand's options are described: the main page's OPTIONS
    for a recording run, the whole of its own page for the others."""
    if sub == "record":
        return man_sections()["OPTIONS"]
    return "\n".join(man_sections(SUB_MANPAGES[sub]).values())


@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_man_page_options_match_help(sub, options):
    documented = set(LONGOPT.findall(roff_plain(man_options_text(sub))))
    want = set(options[sub])
    if sub != "record":     # argp's own three are described once, in pybpfprof(1)'s OPTIONS
        want -= ARGP_STANDARD
        documented -= ARGP_STANDARD
    assert sorted(want - documented) == [], "in `%s --help` but not in its man page" % sub
    assert sorted(documented - want) == [], "in its man page but not in `%s --help`" % sub


def test_guide_usage_options_match_help(options):
    documented = set(LONGOPT.findall(guide(USAGE_PAGES)))
    every = set().union(*options.values())
    assert sorted(every - documented) == [], "in some --help but not in docs' usage pages"
    assert sorted(documented - every) == [], "in docs' usage pages but in no --help"


@pytest.mark.parametrize("sub,heading", [("top", "top: a live view"),
                                         ("dump", "dump: every thread's stack, once"),
                                         ("convert", "convert: collapsed stacks to any format"),
                                         ("diff", "diff: two profiles compared"),
                                         ("agent", "agent: continuous profiling for a fleet")])
def test_guide_subcommand_sections_match_help(sub, heading, options):
    documented = set(LONGOPT.findall(md_section(guide(), heading)))
    want = options[sub] - ARGP_STANDARD
    assert sorted(want - documented) == [], "docs' %r misses options of %s" % (heading, sub)
    assert sorted(documented - want) == [], "docs' %r names options %s lacks" % (heading, sub)


def completion_options(sub):
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c",
                        'source "$1" && echo $_pybpfprof_%s_opts' % sub, "bash", COMPLETION],
                       capture_output=True, universal_newlines=True, timeout=30)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return set(LONGOPT.findall(r.stdout))


@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_completion_options_match_help(sub, options):
    assert completion_options(sub) == options[sub]


# --- (b) exit codes ------------------------------------------------------------------

def enum_exit_codes():
    m = re.search(r"enum pbp_exit\s*\{(.*?)\};", read(HEADER), re.S)
    assert m, "no enum pbp_exit in user/core/errors.h"
    codes, nxt = {}, 0
    for name, value in re.findall(r"\b(EXIT_\w+)\s*(?:=\s*(\d+))?\s*,", re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)):
        nxt = int(value) if value else nxt
        codes[nxt] = name
        nxt += 1
    assert codes.get(0) == "EXIT_OK" and len(codes) >= 5, codes
    return codes


def test_guide_exit_codes_match_enum():
    table = md_section(guide(), "Exit codes")
    rows = re.findall(r"(?m)^\|\s*(\d+)\s*\|\s*`?(EXIT_\w+)`?\s*\|", table)
    got = {int(code): name for code, name in rows}
    assert len(rows) == len(got), "a code twice in the guide's exit-code table"
    assert got == enum_exit_codes()


def test_man_page_exit_codes_match_enum():
    body = man_sections()["EXIT STATUS"]
    entries = re.findall(r"(?ms)^\.TP\n\.B (\d+)\n(.*?)(?=^\.TP|\Z)", body)
    got = {}
    for code, text in entries:
        names = re.findall(r"\b(EXIT_\w+)\b", text)
        assert len(names) == 1, "man page: exit code %s names %s" % (code, names)
        got[int(code)] = names[0]
    assert len(entries) == len(got), "a code twice in the man page"
    assert got == enum_exit_codes()


def test_guide_explains_every_error_string():
    """Every message pbp_strerror() can return is in docs/troubleshooting.md."""
    body = re.search(r"const char \*pbp_strerror\(int err\)\s*\{(.*?)\n\}", read(ERRORS_C), re.S)
    assert body, "no pbp_strerror in user/core/errors.c"
    messages = [s for s in re.findall(r'return "([^"]*)";', body.group(1)) if s != "ok"]
    assert len(messages) >= 5
    trouble = md_section(guide(), "Troubleshooting")
    missing = [s for s in messages if s not in trouble]
    assert missing == [], "not explained in docs/troubleshooting.md"


def anchors(path):
    """The GitHub anchors of a page's headings (outside code blocks)."""
    out, fence = set(), False
    for line in read(path).splitlines():
        if line.startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"^#+ (.*)$", line)
        if m:
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return out


def test_readme_is_short():
    n = read(README).count("\n")
    assert n <= README_MAX_LINES, "README.md has %d lines: the depth goes in docs/" % n


@pytest.mark.parametrize("page", [README] + doc_pages(), ids=os.path.basename)
def test_links_lead_somewhere(page):
    """Every relative link (images too) names a file of the tree, and its
    #anchor a heading of that file."""
    text = re.sub(r"(?ms)^```.*?^```", "", read(page))
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        assert os.path.exists(dest), "%s: %s" % (os.path.relpath(page, REPO), target)
        if anchor:
            assert anchor in anchors(dest), "%s: %s" % (os.path.relpath(page, REPO), target)


# --- (c) the man page renders cleanly ----------------------------------------------------

@pytest.mark.parametrize("page", [MANPAGE] + sorted(SUB_MANPAGES.values()), ids=os.path.basename)
def test_man_page_renders_without_warnings(page):
    # groff passes a control character through silently: a "\f" written
    # through a string escape becomes a form feed, and "\fBx\fR" shows as "BxR".
    with open(page, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", line), "%s:%d: %r" % (page, n, line)
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", page],
                       capture_output=True, universal_newlines=True, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    env = dict(os.environ, MANPAGER="cat", PAGER="cat", MANWIDTH="80", LC_ALL="C.UTF-8")
    r = subprocess.run(["man", "--warnings", "-l", page], capture_output=True,
                       universal_newlines=True, timeout=60, env=env)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    headings = ("NAME", "SYNOPSIS", "OPTIONS", "EXIT STATUS", "EXAMPLES") if page == MANPAGE else \
        ("NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO")
    for heading in headings:
        assert re.search(r"(?m)^%s$" % heading, r.stdout), heading


# --- (d) bash completion ---------------------------------------------------------------

def complete(*words):
    """What the completion offers for `pybpfprof WORDS...`, the last word being completed."""
    words = ("pybpfprof",) + words
    script = ('source "$1" || exit 1\n'
              'spec=$(complete -p pybpfprof) || exit 2\n'
              'shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))\n'
              'COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}\n'
              '_pybpfprof; printf "%s\\n" "${COMPREPLY[@]}"\n')
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "bash", COMPLETION] + list(words),
                       capture_output=True, universal_newlines=True, timeout=30)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return [w for w in r.stdout.splitlines() if w]


def test_completion_loads_and_completes_options():
    assert complete("--mo") == ["--mode"]
    assert complete("-m", "") == ["cpu", "wall", "gil"]
    assert complete("--format", "p") == ["pprof", "pstats"]
    assert complete("d") == ["dump", "diff"]
    assert complete("to") == ["top"]
    assert complete("top", "--on") == ["--once"]
    assert complete("dump", "--j") == ["--json"]
    assert complete("convert", "--in") == ["--input"]


def test_completion_offers_own_pid():
    assert str(os.getpid()) in complete("-p", "")


# --- (e) make demo ----------------------------------------------------------------------

def demo_processes():
    r = subprocess.run(["pgrep", "-f", os.path.join(REPO, "scripts", "demo_app.py")],
                       capture_output=True, universal_newlines=True)
    return r.stdout.split()


def test_make_demo():
    if os.geteuid() != 0:
        pytest.skip("make demo loads BPF programs: run the tests as root")
    assert demo_processes() == [], "a demo app is already running"
    out = os.path.join(REPO, "demo.html")
    start = time.time()
    r = subprocess.run(["make", "-C", REPO, "demo"], capture_output=True,
                       universal_newlines=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert os.path.isfile(out) and os.path.getmtime(out) >= start - 1
    assert out in r.stdout, "the demo does not say where the flame graph is"

    page = read(out)
    assert "/http/server.py" in page
    assert re.search(r"/json/\w+\.py", page)
    assert re.search(r"/re/\w+\.py", page)

    # The run's summary on stderr: every thread's statuses, then the top table.
    for status in ("[running]", "[native, no GIL]", "[sleeping]"):
        assert status in r.stderr, "%s missing from the summary:\n%s" % (status, r.stderr)
    assert re.search(r"(?m)^\s+%Own\s+%Total", r.stderr), "no top-functions table:\n" + r.stderr
    for name in ("http-server", "http-client", "log-parser", "batcher", "hasher"):
        assert re.search(r"(?m)^\s+thread\s+\d+\s+%s\s" % name, r.stderr), name

    pid = int(re.search(r"demo: profiling \S+ \(pid (\d+)", r.stdout).group(1))
    assert not os.path.exists("/proc/%d" % pid), "the demo app is still there"
    assert demo_processes() == []
