"""A target in C called from Python and calling back: builds pbpnat.c
(beside this file, or $PBP_NATEXT_SRC) with gcc against the interpreter's
own headers into $PBP_READY's directory (or imports the one at
$PBP_NATEXT_SO, built by the test where there is no gcc), then loops: outer() -> pbpnat.call
(C) -> in_callback() (Python) -> pbpnat.spin (C, spinning).

Writes $PBP_READY: {"pid", "version"} once it runs. Runs until killed."""

import os
import subprocess
import sys
import sysconfig

from pbp_target import ready_path, say_ready


def build():
    if os.environ.get("PBP_NATEXT_SO"):     # built for us (a chroot without gcc)
        sys.path.insert(0, os.path.dirname(os.environ["PBP_NATEXT_SO"]))
        return
    src = os.environ.get("PBP_NATEXT_SRC") or os.path.join(os.path.dirname(__file__), "pbpnat.c")
    out_dir = os.path.dirname(ready_path())
    so = os.path.join(out_dir, "pbpnat" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.check_call(["gcc", "-shared", "-fPIC", "-O1", "-g", "-I",
                           sysconfig.get_paths()["include"], src, "-o", so])
    sys.path.insert(0, out_dir)


build()
import pbpnat  # noqa: E402


def in_callback():
    pbpnat.spin(3000000)  # mark: spin


def outer():
    while True:
        pbpnat.call(in_callback)  # mark: call


say_ready()
outer()
