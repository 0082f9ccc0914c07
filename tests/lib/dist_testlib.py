"""Checks shared by the distributed-run tests (tests/mpi/t_dist_*_slow.py, t_slurm_slow.py).

`check_report(run_dir, ranks)` runs `anchorpost report RUNDIR` on a
recording of several ranks (or several training processes) and checks
what a user of a distributed run is promised (docs/mpi.md):
  * report exits 0 and prints the ranks table, a block per rank whose
    phase rows carry a 95 % interval, and the stragglers view;
  * phases.csv has scope rows for every rank (and host, and "all"), each
    rank's phases with joules inside their interval;
  * the node split: per host and device group, the ranks' (total) rows add
    up to the host's (total), which is perun's node total read from the
    HDF5 file itself (the RAPL counters, alt_values), and the host's phase
    rows are the sums of its ranks';
  * ranks.csv and stragglers.csv name exactly those ranks, never a tool's
    process (perun's, the launcher's: not_pids).
"""
import csv
import os
import re
import subprocess

ROOT = os.environ.get("ANCHOR_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD") or os.path.join(ROOT, "build")
ANCHORPOST = os.path.join(BUILD, "anchorpost")


def fail(msg):
    print("FAIL:", msg)
    raise SystemExit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def perun_node_totals(h5_path):
    """{(host, group): joules} over perun's span from the RAPL counters
    (alt_values, uint64 uJ) of the last multirun's round 0: what perun
    itself measured, independent of anchorpost."""
    import h5py
    out = {}
    with h5py.File(h5_path, "r") as f:
        app = f[list(f.keys())[0]]
        runs = app["nodes"]
        run = runs[sorted(runs.keys())[-1]]
        rnd = run["nodes"]["0"]
        for host in rnd["nodes"]:
            for group in rnd["nodes"][host]["nodes"]:
                gnode = rnd["nodes"][host]["nodes"][group]
                for sensor in gnode["nodes"]:
                    raw = gnode["nodes"][sensor]["raw_data"]
                    if "alt_values" not in raw:
                        continue
                    v = raw["alt_values"][()]
                    mag = float(raw["alt_values"].attrs.get("mag", 1e-6))
                    key = (host.split(".")[0], group)
                    out[key] = out.get(key, 0.0) + (float(v[-1]) - float(v[0])) * mag
    return out


def num(x):
    return float(x) if x not in ("", None) else float("nan")


def check_report(run_dir, ranks, perun_h5, label, not_pids=(), env=None, want_tty=()):
    """Run `anchorpost report run_dir`; check it as the module says.  ranks:
    the rank labels expected in ranks.csv ("0", "1"; "" for a process
    without a rank, then the count matters).  Returns (stdout, phases rows,
    ranks rows)."""
    p = subprocess.run([ANCHORPOST, "report", run_dir], capture_output=True, text=True, env=env, timeout=600)
    check(p.returncode == 0, "%s: report exit %d\n%s%s" % (label, p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
    out = p.stdout
    rep = os.path.join(run_dir, "report")
    for name in ("phases.csv", "stragglers.csv", "ranks.csv", "timeline.svg", "trace.json"):
        check(os.path.getsize(os.path.join(rep, name)) > 0, "%s: report wrote no %s" % (label, name))
    for needle in want_tty:
        check(needle in out, "%s: %r not in report's output:\n%s" % (label, needle, out[:4000]))

    rk = read_csv(os.path.join(rep, "ranks.csv"))
    check(sorted(r["rank"] for r in rk) == sorted(ranks), "%s: ranks.csv has %s, want %s" %
          (label, [r["rank"] for r in rk], sorted(ranks)))
    for r in rk:
        check(int(r["pid"]) not in not_pids, "%s: a tool's process %s is a rank in ranks.csv" % (label, r["pid"]))

    # The terminal: the ranks table, a block per rank (or process) with
    # intervals on its phase rows, and the stragglers.
    check(re.search(r"\d+ ring\(s\), %d rank\(s\)" % len(ranks), out), "%s: no ranks table:\n%s" % (label, out[:2000]))
    blocks = re.split(r"\n(?=scope )", out)
    for r in rk:
        scope = ("scope rank %s rank %s:" % (r["host"], r["rank"]) if r["rank"] else
                 "scope process %s pid %s:" % (r["host"], r["pid"]))
        block = [b for b in blocks if b.startswith(scope)]
        check(len(block) == 1, "%s: no terminal block %r:\n%s" % (label, scope, out[:4000]))
        ci_rows = [ln for ln in block[0].splitlines()[2:] if re.search(r"\[-?[0-9.]+, -?[0-9.]+\]", ln) and
                   not ln.startswith("(")]
        check(len(ci_rows) >= 3, "%s: rank %s's block has %d phase rows with an interval:\n%s" %
              (label, r["rank"], len(ci_rows), block[0]))
    check("stragglers:" in out, "%s: no stragglers view" % label)

    rows = read_csv(os.path.join(rep, "phases.csv"))
    check({"flags", "ci95_low_j", "ci95_high_j", "node_share"} <= set(rows[0]), "%s: phases.csv columns %s" %
          (label, list(rows[0])))
    truth = perun_node_totals(perun_h5)
    hosts = sorted({r["host"] for r in rk})
    groups = sorted({x["device_group"] for x in rows if x["device_group"]})
    check(groups, "%s: no device group with energy in phases.csv" % label)
    def is_unit(x, r):
        return (x["scope"] == "rank" and x["rank"] == r["rank"] if r["rank"] else
                x["scope"] == "process" and x["pid"] == r["pid"]) and x["host"] == r["host"]

    for r in rk:
        mine = [x for x in rows if is_unit(x, r)]
        check(mine, "%s: no scope=rank rows for rank %r" % (label, r["rank"]))
        attributed = [x for x in mine if x["row"] == "phase" and x["energy_j"] and "tool" not in x["flags"]]
        check(len(attributed) >= 3, "%s: rank %r has %d phase rows with joules" % (label, r["rank"], len(attributed)))
        for x in attributed:
            e, lo, hi = num(x["energy_j"]), num(x["ci95_low_j"]), num(x["ci95_high_j"])
            check(lo - 1e-9 <= e <= hi + 1e-9, "%s: rank %s %s %s: %g J outside its interval [%g, %g]" %
                  (label, r["rank"], x["phase"], x["device_group"], e, lo, hi))
    for host in hosts:
        for g in groups:
            def tot(pick, what):
                got = [x for x in rows if pick(x) and x["row"] == "total" and x["device_group"] == g]
                check(len(got) == 1, "%s: %d (total) rows for %s %s" % (label, len(got), what, g))
                return num(got[0]["energy_j"])
            node = tot(lambda x: x["scope"] == "host" and x["host"] == host, "host " + host)
            ranks_sum = sum(tot(lambda x, r=r: is_unit(x, r), "rank %r pid %s" % (r["rank"], r["pid"]))
                            for r in rk if r["host"] == host)
            want = truth.get((host, g))
            check(want is not None, "%s: perun's file has no %s %s counter (%s)" % (label, host, g, sorted(truth)))
            check(abs(ranks_sum - node) <= 1e-6 * max(1.0, node), "%s: %s %s: ranks add up to %.6f J, the node %.6f J"
                  % (label, host, g, ranks_sum, node))
            check(abs(node - want) <= 1e-4 * max(1.0, want), "%s: %s %s: node total %.6f J, perun's counters %.6f J"
                  % (label, host, g, node, want))
            for name in {x["phase"] for x in rows if x["row"] == "phase" and x["scope"] == "host" and x["energy_j"]}:
                h = [num(x["energy_j"]) for x in rows if x["scope"] == "host" and x["host"] == host and
                     x["phase"] == name and x["device_group"] == g]
                s = sum(num(x["energy_j"]) for x in rows if x["scope"] in ("rank", "process") and
                        x["host"] == host and x["phase"] == name and x["device_group"] == g and x["energy_j"])
                check(len(h) == 1 and abs(h[0] - s) <= 1e-6 * max(1.0, s), "%s: host %s %s %s: %s J, its ranks %.6f J"
                      % (label, host, name, g, h, s))
            print("%s: %s %s: %d rank(s) add up to %.3f J = perun's node total %.3f J" %
                  (label, host, g, sum(1 for r in rk if r["host"] == host), ranks_sum, want))
    st = read_csv(os.path.join(rep, "stragglers.csv"))
    check(sorted({(x["rank"], x["pid"]) for x in st}) == sorted({(r["rank"], r["pid"]) for r in rk}),
          "%s: stragglers.csv has ranks/pids %s, ranks.csv %s" % (label, sorted({(x["rank"], x["pid"]) for x in st}),
                                                                 sorted((r["rank"], r["pid"]) for r in rk)))
    return out, rows, rk
