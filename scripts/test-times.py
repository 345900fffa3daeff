#!/usr/bin/python3
"""Where an integration run's time went: seconds per test module, from the
JUnit XML pytest wrote (make integration keeps it in build/), the most
first. Usage: test-times.py FILE.xml [N]"""
import collections
import sys
import xml.etree.ElementTree as ET


def main():
    per = collections.Counter()
    count = collections.Counter()
    for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
        module = case.get("classname", "?").split(".")[-1]
        per[module] += float(case.get("time") or 0)
        count[module] += 1
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    total = sum(per.values())
    print("integration time by module (%d s in all):" % total)
    for module, secs in per.most_common(top):
        print("  %6.0f s %5.1f %%  %4d tests  %s" % (secs, 100 * secs / total, count[module], module))


if __name__ == "__main__":
    main()
