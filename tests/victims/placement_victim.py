"""Victim of the placement tests and bench/placement_suite.py (issue 21):
a training-like loop whose phases are written in one of the ways users
write them, each phase running a function that runs in that phase only
(its samples' truth).

  python placement_victim.py STYLE SECONDS [SEED]

STYLE: inline, helper_class, helper_begin, contextmanager, generic (one
`with anchor.phase(name)` for every phase, called from one line in a
loop), generic_lines (the same helper called from one line per phase),
decorator.  Before the loop, SETUP_S of set-up work outside every phase
(imports, model building: the stretch that let an offset search slide).
Phase lengths are jittered so that the order of phases and their
lengths identify the offset, as in real training."""
import contextlib
import functools
import random
import sys
import time

import anchor

PHASE_FN = {"data": "data_work", "fwd": "fwd_work", "bwd": "bwd_work", "opt": "opt_work"}
SETUP_S = 0.6


def spin(s):
    t = time.perf_counter()
    while time.perf_counter() - t < s:
        pass


def setup_work(s):
    spin(s)


def data_work(s):
    time.sleep(s * 0.5)  # waiting for a batch (idle: seen with --idle only)
    spin(s * 0.5)


def fwd_work(s):
    spin(s)


def bwd_work(s):
    spin(s)


def opt_work(s):
    spin(s)


class Phase:
    """The user's own context manager (issue 21's first failing style)."""

    def __init__(self, name):
        self.p = anchor.phase(name)

    def __enter__(self):
        self.p.__enter__()
        return self

    def __exit__(self, *exc):
        return self.p.__exit__(*exc)


class BeginEnd:
    """A helper class that opens the phase with begin/end."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        anchor.begin(self.name)
        return self

    def __exit__(self, *exc):
        anchor.end(self.name)
        return False


@contextlib.contextmanager
def cm_phase(name):
    with anchor.phase(name):
        yield


def run_phase(name, fn, s):
    """One generic site every phase goes through."""
    with anchor.phase(name):
        return fn(s)


def timed(name):
    """A decorator factory of the user's own (not anchor's)."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with anchor.phase(name):
                return fn(*a, **k)
        return wrapper
    return deco


d_data, d_fwd, d_bwd, d_opt = (timed(n)(f) for n, f in
                               (("data", data_work), ("fwd", fwd_work), ("bwd", bwd_work), ("opt", opt_work)))


def step_inline(L):
    with anchor.phase("data"):
        data_work(L["data"])
    with anchor.phase("fwd"):
        fwd_work(L["fwd"])
    with anchor.phase("bwd"):
        bwd_work(L["bwd"])
    with anchor.phase("opt"):
        opt_work(L["opt"])


def step_helper_class(L):
    with Phase("data"):
        data_work(L["data"])
    with Phase("fwd"):
        fwd_work(L["fwd"])
    with Phase("bwd"):
        bwd_work(L["bwd"])
    with Phase("opt"):
        opt_work(L["opt"])


def step_helper_begin(L):
    with BeginEnd("data"):
        data_work(L["data"])
    with BeginEnd("fwd"):
        fwd_work(L["fwd"])
    with BeginEnd("bwd"):
        bwd_work(L["bwd"])
    with BeginEnd("opt"):
        opt_work(L["opt"])


def step_contextmanager(L):
    with cm_phase("data"):
        data_work(L["data"])
    with cm_phase("fwd"):
        fwd_work(L["fwd"])
    with cm_phase("bwd"):
        bwd_work(L["bwd"])
    with cm_phase("opt"):
        opt_work(L["opt"])


def step_generic(L):
    for name in ("data", "fwd", "bwd", "opt"):
        run_phase(name, globals()[PHASE_FN[name]], L[name])


def step_generic_lines(L):
    run_phase("data", data_work, L["data"])
    run_phase("fwd", fwd_work, L["fwd"])
    run_phase("bwd", bwd_work, L["bwd"])
    run_phase("opt", opt_work, L["opt"])


def step_decorator(L):
    d_data(L["data"])
    d_fwd(L["fwd"])
    d_bwd(L["bwd"])
    d_opt(L["opt"])


def main():
    style, seconds = sys.argv[1], float(sys.argv[2])
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    step = globals()["step_" + style]
    setup_work(SETUP_S)
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        L = {"data": rng.uniform(0.01, 0.03), "fwd": rng.uniform(0.015, 0.04),
             "bwd": rng.uniform(0.03, 0.07), "opt": rng.uniform(0.005, 0.02)}
        step(L)
        spin(rng.uniform(0.002, 0.01))  # between steps: in no phase


if __name__ == "__main__":
    main()
