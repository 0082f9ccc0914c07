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
lengths identify the offset, as in real training.

With ANCHOR_PLACEMENT_PHASE_FILE set (an anchor_emul phase file), each
phase-only function publishes its phase to the emulated sensor while it
runs (ids in POWER_PHASES order, +1) and "gap" between them, "off" (0)
after the loop: the sensor then draws a known power per function, and its
truth ledger holds each phase-only function's exact joules
(tests/pyspy/t_pyspy_function_phases_slow.py)."""
import contextlib
import functools
import os
import random
import sys
import time

import anchor

PHASE_FN = {"data": "data_work", "fwd": "fwd_work", "bwd": "bwd_work", "opt": "opt_work"}
SETUP_S = 0.6
POWER_PHASES = ("data", "fwd", "bwd", "opt", "gap")


class _NoPublisher:
    def publish(self, phase_id):
        pass


def _publisher():
    path = os.environ.get("ANCHOR_PLACEMENT_PHASE_FILE")
    if not path:
        return _NoPublisher()
    from anchor_emul import phasefile  # tools/emulated_power on PYTHONPATH
    return phasefile.Publisher(path)


PUB = _publisher()
PID = {n: i for i, n in enumerate(POWER_PHASES, start=1)}


def powered(name):
    """The function draws its phase's power while it runs (no-op without a phase file)."""
    def deco(fn):
        @functools.wraps(fn)
        def run(s):
            PUB.publish(PID[name])
            try:
                return fn(s)
            finally:
                PUB.publish(PID["gap"])
        return run
    return deco


def spin(s):
    t = time.perf_counter()
    while time.perf_counter() - t < s:
        pass


def setup_work(s):
    spin(s)


# The clock (bench/placement_suite.py's time-error rows): with
# ANCHOR_PLACEMENT_CLOCK_LOG set, each phase-only function's busy time runs
# as back-to-back slots of CLOCK_SLOT_S, each a function of its own name
# (CLOCK_NAMES per phase, taken in turn), and every slot's begin and end
# (CLOCK_MONOTONIC ns) go to that file at exit: a py-spy sample holding
# slot X was taken while one of X's slots ran, so its true instant is
# known to within one slot.  A name recurs only every CLOCK_NAMES slots of
# its phase (several steps: 0.3-1 s), so placement errors up to about
# half that are measured, not aliased onto the next occurrence.
CLOCK_LOG = os.environ.get("ANCHOR_PLACEMENT_CLOCK_LOG")
CLOCK_NAMES = 50
CLOCK_SLOT_S = 0.002
_clock_rows = []
_clock_next = {}


def _clock_slot_fn(name):
    # compiled under a file name no phase site uses, so a slot frame never
    # matches a SITE record's lines
    ns = {"spin_until": _spin_until, "rows": _clock_rows, "mono": time.monotonic_ns}
    code = compile("def %s(t_end_ns):\n    t0 = mono()\n    spin_until(t_end_ns)\n    rows.append((%r, t0, mono()))\n"
                   % (name, name), "<placement clock>", "exec")
    exec(code, ns)
    return ns[name]


def _spin_until(t_end_ns):
    while time.monotonic_ns() < t_end_ns:
        pass


_clock_fns = {q: [_clock_slot_fn("%s_c%02d" % (q, k)) for k in range(CLOCK_NAMES)]
              for q in ("data", "fwd", "bwd", "opt")} if CLOCK_LOG else {}


def work(q, s):
    """The busy part of phase q's function: a spin, or the clock's slots."""
    if not CLOCK_LOG:
        spin(s)
        return
    end = time.monotonic_ns() + int(s * 1e9)
    fns = _clock_fns[q]
    while True:
        now = time.monotonic_ns()
        if now >= end:
            return
        k = _clock_next.get(q, 0)
        _clock_next[q] = (k + 1) % CLOCK_NAMES
        fns[k](min(end, now + int(CLOCK_SLOT_S * 1e9)))


def write_clock_log():
    if CLOCK_LOG:
        with open(CLOCK_LOG, "w") as f:
            f.write("slot,t0_mono_ns,t1_mono_ns\n")
            for name, t0, t1 in _clock_rows:
                f.write("%s,%d,%d\n" % (name, t0, t1))


@powered("data")
def data_work(s):
    time.sleep(s * 0.5)  # waiting for a batch (idle: seen with --idle only)
    work("data", s * 0.5)


@powered("fwd")
def fwd_work(s):
    work("fwd", s)


@powered("bwd")
def bwd_work(s):
    work("bwd", s)


@powered("opt")
def opt_work(s):
    work("opt", s)


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
    PUB.publish(PID["gap"])
    setup_work(SETUP_S)
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        L = {"data": rng.uniform(0.01, 0.03), "fwd": rng.uniform(0.015, 0.04),
             "bwd": rng.uniform(0.03, 0.07), "opt": rng.uniform(0.005, 0.02)}
        step(L)
        spin(rng.uniform(0.002, 0.01))  # between steps: in no phase
    write_clock_log()
    PUB.publish(0)  # "off": 0 W
    if not isinstance(PUB, _NoPublisher):
        time.sleep(0.3)  # at 0 W: perun's last window closes over every joule


if __name__ == "__main__":
    main()
