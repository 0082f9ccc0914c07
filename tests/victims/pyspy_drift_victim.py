"""Victim for t_pyspy_drift: a sync pulse at start and at the end, and
between them 50 rounds of two phases that spin in their own functions."""
import time
import anchor


def spin(ms):
    t = time.monotonic() + ms / 1e3
    while time.monotonic() < t:
        pass


def work_only():
    spin(40)


def rest_only():
    spin(25)


anchor.sync_pulse()
for _ in range(50):
    with anchor.phase("work"):
        work_only()
    with anchor.phase("rest"):
        rest_only()
anchor.sync_pulse()
