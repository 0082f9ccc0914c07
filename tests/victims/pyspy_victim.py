"""Victim for the py-spy tests: known functions on two threads.  alpha and
beta spin on the main thread for known times; gamma_worker mostly sleeps
on its own thread for the whole run.  Writes its own timings as JSON."""
import json
import sys
import threading
import time


def spin(sec):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < sec:
        pass


def alpha():
    spin(0.6)


def beta():
    spin(0.4)


def gamma_worker(stop):
    while not stop.is_set():
        time.sleep(0.02)


stop = threading.Event()
t = threading.Thread(target=gamma_worker, args=(stop,), name="gamma")
t.start()
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
with open(sys.argv[1], "w") as f:
    json.dump({"alpha": ta, "beta": tb}, f)
