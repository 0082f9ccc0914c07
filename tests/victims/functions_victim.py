"""Victim for the `functions`/`timeline` tests: known functions inside known
anchored ranges, with a sync pulse at both ends (none with --no-pulse).
Usage: functions_victim.py [REPS] [--no-pulse]

hot_spin() busy-spins only inside "hot" ranges and cool_wait() sleeps only
inside "cool" ranges, on the main thread; a helper thread sleeps the whole
run (an idle thread for the split rule).  Under the emulated CPU-activity
sensor "hot" draws the power, so hot_spin must carry the most self energy.
"""
import sys
import threading
import time

import anchor


def hot_spin(sec):
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < sec:
        n += 1
    return n


def cool_wait(sec):
    time.sleep(sec)


def helper(stop):
    while not stop.is_set():
        time.sleep(0.05)


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    pulse = "--no-pulse" not in sys.argv
    stop = threading.Event()
    t = threading.Thread(target=helper, args=(stop,), name="helper")
    t.start()
    time.sleep(0.3)
    if pulse:
        anchor.sync_pulse()
    for _ in range(reps):
        with anchor.phase("hot"):
            hot_spin(0.25)
        with anchor.phase("cool"):
            cool_wait(0.15)
    if pulse:
        anchor.sync_pulse()
    time.sleep(0.2)
    stop.set()
    t.join()


if __name__ == "__main__":
    main()
