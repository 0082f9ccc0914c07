"""The program py-spy sampled for tests/data/pyspy (see make.sh): three
threads with known functions, one of them mostly idle, for about 1.5 s."""
import threading
import time


def spin(sec):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < sec:
        pass


def alpha():
    spin(0.5)


def beta():
    spin(0.3)


def gamma_worker(stop):
    while not stop.is_set():
        time.sleep(0.02)


def delta_worker():
    for _ in range(4):
        spin(0.05)
        time.sleep(0.05)


stop = threading.Event()
workers = [threading.Thread(target=gamma_worker, args=(stop,), name="gamma"),
           threading.Thread(target=delta_worker, name="delta")]
for w in workers:
    w.start()
time.sleep(0.2)
for _ in range(2):
    alpha()
    beta()
stop.set()
for w in workers:
    w.join()
