"""Victim for the py-spy tests: known functions on two threads.  alpha and
beta spin on the main thread for known times; gamma_worker mostly sleeps
on its own thread for the whole run.  Writes its own timings as JSON
(alpha, beta and run_s: from the script's first line to its end)."""
import json
import sys
import threading
import time

T_START = time.perf_counter()


def tick():
    pass


def spin(sec):
    # tick() makes consecutive samples differ (py-spy's chrometrace writes
    # an event only when the stack changes), so the trace shows when py-spy
    # sampled and when it stalled (pyspy_common.pyspy_lag)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < sec:
        tick()


def alpha():
    spin(0.6)


def beta():
    spin(0.4)


def gamma_worker(stop):
    while not stop.is_set():
        time.sleep(0.02)


# A clock py-spy cannot help recording: this thread sits in clock_N for
# the N-th CLOCK_SLOT_S of every cycle, so each speedscope sample (whose
# times are nominal) says where in real time it was taken, and a profile
# in which py-spy stalled or crowded its samples shows it
# (pyspy_common.pyspy_lag).
CLOCK_SLOT_S = 0.025


def clock_wait():
    time.sleep(CLOCK_SLOT_S - time.perf_counter() % CLOCK_SLOT_S)


def clock_0():
    clock_wait()


def clock_1():
    clock_wait()


def clock_2():
    clock_wait()


def clock_3():
    clock_wait()


def clock_worker(stop):
    slots = (clock_0, clock_1, clock_2, clock_3)
    while not stop.is_set():
        slots[int(time.perf_counter() / CLOCK_SLOT_S) % 4]()


stop = threading.Event()
t = threading.Thread(target=gamma_worker, args=(stop,), name="gamma")
t.start()
clock = threading.Thread(target=clock_worker, args=(stop,), name="clock")
clock.start()
time.sleep(0.2)
t0 = time.perf_counter()
alpha()
ta = time.perf_counter() - t0
t0 = time.perf_counter()
beta()
tb = time.perf_counter() - t0
time.sleep(0.2)
stop.set()
t.join()
clock.join()
with open(sys.argv[1], "w") as f:
    json.dump({"alpha": ta, "beta": tb, "run_s": time.perf_counter() - T_START}, f)
