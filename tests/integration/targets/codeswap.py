"""Adversarial target: two functions made, run and freed in turn, each new
one most often at the address the other had just left.

Runs on CPython 3.6 to 3.14 (keep the syntax at 3.6's level).

    codeswap.py

The main thread compiles swap_a (first line 1) or swap_b (first line 4),
alternately, runs it from a call line of its own, and drops it: its code
object is freed before the next is made. A profile that named a code
object by what an earlier one at its address was would show swap_a
called from swap_b's line, or the other way round. Writes $PBP_READY
{"pid", "version"} once it turns.
"""


from pbp_target import say_ready

BODY = "    x = 0\n    for i in range(n):\n        x += i\n    return x\n"
SRC_A = "def swap_a(n):\n" + BODY
SRC_B = "\n\n\ndef swap_b(n):\n" + BODY


def main():
    i = 0
    while True:
        i += 1
        ns = {}
        if i % 2:
            exec(compile(SRC_A, "<swap>", "exec"), ns)
            ns["swap_a"](3000)  # mark: call-a
        else:
            exec(compile(SRC_B, "<swap>", "exec"), ns)
            ns["swap_b"](3000)  # mark: call-b
        if i == 200:
            say_ready()


main()
