"""The bench: its figures, and the scenarios run in turn on each interpreter."""

import os
import subprocess
import tempfile
import time

import agent
import cost
import host
import kframes
import native
import page
import pool
import slowdown
import top
import walkcost
import wall
from common import PBP, SCENARIOS, log
from targets import kill_all


class Bench(object):
    """What the scenarios share: the configuration, the figures per interpreter
    (add), detail lines per scenario (det), and output file names (out)."""

    def __init__(self, cfg, interps, only):
        self.cfg, self.interps, self.only = cfg, interps, only
        self.figs = {}          # interp name -> {key: Figure}
        self.detail = {}        # scenario -> list of markdown lines
        self.page_figs = []     # the page scenario's: not per interpreter
        self.agent_figs = []    # the agent scenario's: once, every version at once
        self.agent_row = None   # ... and its dated row for RESULTS.md
        self.tmp = tempfile.mkdtemp(prefix="pbp-bench-out-")
        self.has_all = "--all" in subprocess.run([PBP, "--help"], capture_output=True,
                                                 text=True).stdout

    def add(self, it, fig):
        self.figs.setdefault(it.name, {})[fig.key] = fig

    def out(self, stem):
        return os.path.join(self.tmp, "%s-%d.txt" % (stem, len(os.listdir(self.tmp))))

    def det(self, scen, line):
        self.detail.setdefault(scen, []).append(line)

    # -- driver

    def run(self):
        order = [s for s in SCENARIOS if s in self.only and s not in ("page", "agent")]
        if "agent" in self.only:
            log("agent (once: pyenv 3.6-3.13 side by side)")
            t = time.monotonic()
            agent.agent(self)
            log("  %.0f s" % (time.monotonic() - t))
        if "page" in self.only:
            log("page (once: not per interpreter)")
            t = time.monotonic()
            page.page(self)
            log("  %.0f s" % (time.monotonic() - t))
        for it in self.interps if order else []:
            it.setup(it.name)
            try:
                for scen in order:
                    if scen == "reads" and "cost" in order:
                        continue    # measured by the cost runs
                    log("%s on %s" % (scen, it.name))
                    t = time.monotonic()
                    {"slowdown": slowdown.slowdown, "cost": cost.cost, "reads": cost.cost,
                     "wall": wall.wall, "host": host.host, "pool": pool.pool, "top": top.top, "deep": cost.deep,
                     "rate": host.rate, "native": native.native,
                     "kframes": kframes.kframes, "walk": walkcost.walk}[scen](self, it)
                    log("  %.0f s" % (time.monotonic() - t))
            finally:
                kill_all()
                it.cleanup()
