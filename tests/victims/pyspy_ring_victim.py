"""Victim for t_pyspy_ring.py: marks alpha_start in the ring (libanchor is
preloaded, so ctypes finds anchor_mark in the process) right before
spinning in alpha() for 0.4 s.  Before it, warm() spins too, calling
tick() so that consecutive samples differ: py-spy's chrometrace (an event
only when a stack changes) then shows whether py-spy was sampling right
before alpha began (a stall there delays the first alpha sample)."""
import ctypes, time
lib = ctypes.CDLL(None)
def tick(): pass
def spin(sec):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < sec: tick()
def warm(): spin(0.3)
def alpha(): spin(0.4)
warm()
lib.anchor_mark(b"alpha_start")
alpha()
