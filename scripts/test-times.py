#!/usr/bin/python3
"""Where an integration run's time went: seconds per test module, from the
JUnit XML files pytest wrote (make integration keeps one per pass in build/),
the most first. Module times are the sum of their tests' times: in the
parallel pass two tests run at once, so the sum there is more than the pass
took, which --passes (lines "PASS SECONDS", from the Makefile) says.
--order prints every module's seconds as the lines of a table of
tests/integration/module_order.py (the order the parallel pass hands the
modules out in), from the parallel pass's file.
Usage: test-times.py [--passes FILE] [--order] FILE.xml... [--top N]"""
import argparse
import collections
import os
import sys
import xml.etree.ElementTree as ET


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--passes")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--order", action="store_true")
    ap.add_argument("xml", nargs="+")
    args = ap.parse_args()
    per = collections.Counter()
    count = collections.Counter()
    for path in args.xml:
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            continue    # a pass that did not get to write its file
        for case in ET.parse(path).getroot().iter("testcase"):
            module = case.get("classname", "?").split(".")[-1]
            per[module] += float(case.get("time") or 0)
            count[module] += 1
    if args.order:
        for module, secs in per.most_common():
            print('    "%s": %d,' % (module, round(secs)))
        return
    if args.passes and os.path.exists(args.passes):
        with open(args.passes) as f:
            walls = [line.split() for line in f if line.strip()]
        print("integration passes: %s; %d s in all" % (
            ", ".join("%s %s s" % (name, secs) for name, secs in walls),
            sum(int(secs) for _, secs in walls)))
    total = sum(per.values())
    if not total:
        return
    print("integration time by module (%d s of tests in all):" % total)
    for module, secs in per.most_common(args.top):
        print("  %6.0f s %5.1f %%  %4d tests  %s" % (secs, 100 * secs / total, count[module], module))


if __name__ == "__main__":
    sys.exit(main())
