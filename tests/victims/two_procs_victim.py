"""Victim for tests/report/t_attrib_once.py: two processes with phases
(the parent's "forward"/"backward", a forked child's "child_work" and
"child_rest"), so phases has scope "all", the parent's process (the same
timeline as "all") and the child's (a timeline of its own).
Usage: two_procs_victim.py [STEPS]
"""
import multiprocessing
import sys
import time

import anchor


def spin(sec):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < sec:
        pass


def child(steps):
    for _ in range(steps):
        with anchor.phase("child_work"):
            spin(0.12)
        with anchor.phase("child_rest"):
            time.sleep(0.06)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    p = multiprocessing.get_context("fork").Process(target=child, args=(steps,))
    p.start()
    for _ in range(steps):
        with anchor.phase("forward"):
            spin(0.08)
        with anchor.phase("backward"):
            spin(0.12)
    p.join()
    return p.exitcode


if __name__ == "__main__":
    sys.exit(main())
