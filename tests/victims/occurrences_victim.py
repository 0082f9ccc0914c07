"""Victim for tests/report/t_occurrences_join_slow.py: phases of known length with
functions that run only inside them, sync pulses at both ends (py-spy's
alignment).  Usage: occurrences_victim.py [REPS]

  train  0.7 s busy in train_spin()   (7 sensor periods at perun's 0.1 s:
                                       long enough for its own joules)
  wait   0.12 s asleep in idle_wait()  (shorter than 5 periods: no joules
                                       of its own, phases.csv has them)
  eval   0.25 s busy in eval_spin()
"""
import sys
import time

import anchor


def train_spin(sec):
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < sec:
        n += 1
    return n


def eval_spin(sec):
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < sec:
        n += 1
    return n


def idle_wait(sec):
    time.sleep(sec)


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    time.sleep(0.3)
    anchor.sync_pulse()
    for _ in range(reps):
        with anchor.phase("train"):
            train_spin(0.7)
        with anchor.phase("wait"):
            idle_wait(0.12)
        with anchor.phase("eval"):
            eval_spin(0.25)
    anchor.sync_pulse()
    time.sleep(0.2)


if __name__ == "__main__":
    main()
