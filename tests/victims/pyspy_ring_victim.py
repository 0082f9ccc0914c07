"""Victim for t_pyspy_ring.py: marks alpha_start in the ring (libanchor is
preloaded, so ctypes finds anchor_mark in the process) right before
spinning in alpha() for 0.4 s."""
import ctypes, time
lib = ctypes.CDLL(None)
def spin(sec):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < sec: pass
def alpha(): spin(0.4)
time.sleep(0.3)
lib.anchor_mark(b"alpha_start")
alpha()
