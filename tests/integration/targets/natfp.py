"""A C extension built with frame pointers, for --native=fp: builds
pbpfp.c (beside this file) with gcc -O2 -fno-omit-frame-pointer against the
interpreter's own headers into $PBP_READY's directory, then loops:
outer() -> pbpfp.chain (C: fp_a -> fp_b -> fp_c, spinning).

Writes $PBP_READY: {"pid", "version"} once it runs. Runs until killed."""

import os
import subprocess
import sys
import sysconfig

from pbp_target import ready_path, say_ready


def build():
    src = os.path.join(os.path.dirname(__file__), "pbpfp.c")
    out_dir = os.path.dirname(ready_path())
    so = os.path.join(out_dir, "pbpfp" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.check_call(["gcc", "-shared", "-fPIC", "-O2", "-fno-omit-frame-pointer", "-g",
                           "-I", sysconfig.get_paths()["include"],
                           # an interpreter run from its build tree (3.14t) keeps pyconfig.h there
                           "-I", os.path.dirname(sysconfig.get_config_h_filename()),
                           src, "-o", so])
    sys.path.insert(0, out_dir)


build()
import pbpfp  # noqa: E402


def outer():
    while True:
        pbpfp.chain(3000000)  # mark: chain


say_ready()
outer()
