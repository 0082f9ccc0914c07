"""Judging 95 % intervals against truth in one test run (shared by the
tests that hold estimates against exact truth)."""


def misses_allowed(n, level=0.95, false_fail=0.005):
    """The most misses n independent intervals of `level` coverage show
    but with probability false_fail: a run-level gate on coverage that a
    correct interval passes 99.5 % of the time.  (Allowing one miss of 14
    fails 15 % of runs at exactly 95 %; the rate itself is measured over
    many runs in the benchmarks, not in one run.)"""
    from math import comb
    p, tail = 1.0 - level, 1.0
    for k in range(n + 1):
        tail -= comb(n, k) * p ** k * (1 - p) ** (n - k)
        if tail <= false_fail:
            return k
    return n


def miss_ratio(est, lo, hi, truth):
    """How far outside its interval the truth lies, in units of the
    interval's half on that side: <= 1 inside; a 95 % interval of a
    normal error is 1.96 sigma, so > 2 is 3.9 sigma (p ~ 1e-4): no
    longer a miss that chance explains."""
    side = (hi - est) if truth > est else (est - lo)
    return abs(truth - est) / side if side > 0 else (0.0 if truth == est else float("inf"))
