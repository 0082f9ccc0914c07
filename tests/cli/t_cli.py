"""The command line convention (README "Command line"), for every subcommand.

Commands come from `anchorpost --help` and their options from each
command's own table (`anchorpost CMD --list-opts`), so a new command or
option is checked without editing this test:
  - -h and --help: the help on stdout, nothing on stderr, exit 0;
  - an unknown option, an option without its value, a bad or out-of-range
    number, an unknown choice: one line on stderr, nothing on stdout, exit 2;
  - a missing input file: one line on stderr, exit 1;
  - the bash completion script is valid bash and completes from the tables.
Then one real run (`anchorpost record -o DIR -- python SCRIPT.py`, the old
spelling, so old invocations keep working) for the outputs: `-o -` on
phases, timeline and samples is parseable CSV alone on stdout, with the
human table on stderr and no stray file; a bad profile leaves stdout empty.
"""
import csv
import io
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from pyanchor_util import ANCHORPOST, PYDIR, PYTHON, TMP, check, fail, need_build  # noqa: E402

need_build()


def ap(*args, cwd=None, timeout=60, env=None):
    return subprocess.run([ANCHORPOST, *args], capture_output=True, text=True, cwd=cwd or TMP,
                          timeout=timeout, env=env)


def one_line_error(p, rc, what):
    check(p.returncode == rc, "%s: exit %d, want %d (stderr: %r)" % (what, p.returncode, rc, p.stderr))
    lines = p.stderr.strip("\n").split("\n")
    check(len(lines) == 1 and lines[0].startswith("anchorpost: "),
          "%s: want one 'anchorpost: ...' line on stderr, got %r" % (what, p.stderr))
    check(p.stdout == "", "%s: stdout should be empty, got %r" % (what, p.stdout[:200]))
    return lines[0]


# ---- every command, from the tables ---------------------------------------
top = ap("--help")
check(top.returncode == 0, "anchorpost --help: exit %d" % top.returncode)
cmds = []
in_list = False
for line in top.stdout.splitlines():
    if line.startswith("commands:"):
        in_list = True
    elif in_list and line.startswith("  ") and line.split():
        cmds.append(line.split()[0])
    elif in_list and not line.strip():
        in_list = False
check(len(cmds) >= 10, "anchorpost --help lists only %r" % cmds)

MISSING = os.path.join(TMP, "no-such-file")
# Arguments that reach the loading stage with a file that does not exist.
RUNTIME = {
    "info": [MISSING], "dump": [MISSING], "perun": [MISSING], "samples": [MISSING], "sensors": [MISSING],
    "phases": ["--ring", MISSING, "--perun", MISSING],
    "functions": ["--ring", MISSING, "--perun", MISSING, "--profile", MISSING],
    "timeline": ["--ring", MISSING, "--perun", MISSING],
    "report": ["--ring", MISSING, "--perun", MISSING, "-d", os.path.join(TMP, "rep")],
    "stragglers": ["--rings", MISSING],
    # record: a directory that cannot be made
    "record": ["-d", "/proc/anchor-no/such", "--", "true"],
}
BAD_NUMBERS = ["abc", "1x", "", "nan", "1e300", "-1e300"]
nchecks = 0
for cmd in cmds:
    for h in ("-h", "--help"):
        p = ap(cmd, h)
        check(p.returncode == 0 and p.stdout.startswith("usage: anchorpost %s" % cmd) and p.stderr == "",
              "%s %s: exit %d, stdout %r, stderr %r" % (cmd, h, p.returncode, p.stdout[:80], p.stderr))
    one_line_error(ap(cmd, "--no-such-option"), 2, "%s --no-such-option" % cmd)
    one_line_error(ap(cmd, "-Z"), 2, "%s -Z" % cmd)
    lo = ap(cmd, "--list-opts")
    check(lo.returncode == 0 and lo.stdout, "%s --list-opts: exit %d" % (cmd, lo.returncode))
    for row in lo.stdout.splitlines():
        names, argh, choices, kind = row.split("\t")
        name = names.split()[0]
        if kind == "flag":
            one_line_error(ap(cmd, name + "=1"), 2, "%s %s=1" % (cmd, name))
            continue
        # The value missing at the end of the line.
        msg = one_line_error(ap(cmd, name), 2, "%s %s (no value)" % (cmd, name))
        check(name in msg, "%s: the error does not name %s: %r" % (cmd, name, msg))
        if kind == "number":
            for bad in BAD_NUMBERS:
                msg = one_line_error(ap(cmd, name, bad), 2, "%s %s %r" % (cmd, name, bad))
                check(name in msg, "%s %s %r: error does not name the option: %r" % (cmd, name, bad, msg))
                nchecks += 1
        if kind == "choice":
            msg = one_line_error(ap(cmd, name + "=nope"), 2, "%s %s=nope" % (cmd, name))
            check(all(c in msg for c in choices.split()), "%s %s: error does not list %s" % (cmd, name, choices))
        nchecks += 1
    if cmd in RUNTIME:
        p = ap(cmd, *RUNTIME[cmd])
        one_line_error(p, 1, "%s on a missing file" % cmd)
    else:
        fail("no runtime-error case for command %r: add one to RUNTIME" % cmd)
print("checked %d commands, %d option errors" % (len(cmds), nchecks))

# A missing input: a usage error, not a runtime one.
one_line_error(ap("info"), 2, "info without a ring")
one_line_error(ap("phases", "--perun", "x"), 2, "phases without --ring")
# Without --perun, phases gives the ring's times (issue 22): a missing ring is a runtime error.
one_line_error(ap("phases", "--ring", "x"), 1, "phases --ring on a missing file, without --perun")
one_line_error(ap("info", "a", "b"), 2, "info with two rings")
one_line_error(ap("nosuchcommand"), 2, "unknown command")
# An option callback's reason reaches the user (cmd/options.h opt_cb, through struct em_error).
line = one_line_error(ap("phases", *(["--rings", "x"] * 4097)), 2, "phases with 4097 --rings")
check("--rings: more than 4096 of them" in line, "phases with 4097 --rings: the callback's reason is lost: %r" % line)

# ---- bash completion from the same tables ---------------------------------
comp = os.path.join(TMP, "anchorpost.bash")
p = ap("--completion", "bash")
check(p.returncode == 0, "--completion bash: exit %d %s" % (p.returncode, p.stderr))
with open(comp, "w") as f:
    f.write(p.stdout)
probe = r'''
source "$1"
c() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _anchorpost; echo "${COMPREPLY[*]}"; }
c anchorpost phas
c anchorpost phases --me
c anchorpost phases --method ""
c anchorpost report --trace-stacks ""
c anchorpost samples --for
'''
p = subprocess.run(["bash", "-c", probe, "bash", comp], capture_output=True, text=True, cwd=TMP)
got = p.stdout.splitlines()
check(p.returncode == 0 and got == ["phases", "--method", "auto split perphase integrate regress",
                                    "phases all none", "--format"],
      "completion: %r (stderr %r)" % (got, p.stderr))

# ---- one real run, for -o - ------------------------------------------------
script = os.path.join(TMP, "cli_victim.py")
with open(script, "w") as f:
    f.write("import anchor, time\n"
            "for i in range(12):\n"
            "    with anchor.phase('step'):\n"
            "        t = time.perf_counter()\n"
            "        while time.perf_counter() - t < 0.2:\n"
            "            pass\n")
env = dict(os.environ, PYTHONPATH=PYDIR)
for k in ("ANCHOR_FILE", "LD_PRELOAD", "ANCHOR_AUTO"):
    env.pop(k, None)
run = os.path.join(TMP, "run")
p = ap("record", "-o", run, "--", PYTHON, script, timeout=300, env=env)
check(p.returncode == 0, "record -o DIR -- python SCRIPT: exit %d\n%s" % (p.returncode, p.stderr[-2000:]))
ring = os.path.join(run, "run.ring")
h5 = [os.path.join(run, "perun", n) for n in os.listdir(os.path.join(run, "perun")) if n.endswith(".hdf5")]
profile = os.path.join(run, "profile.chrometrace.json")
check(len(h5) == 1 and os.path.exists(profile), "record wrote %r" % os.listdir(run))


def csv_only(args, first_col):
    out_dir = os.path.join(TMP, "cwd_" + args[0])
    os.makedirs(out_dir, exist_ok=True)
    p = ap(*args, "-o", "-", cwd=out_dir, timeout=300)
    check(p.returncode == 0, "%s -o -: exit %d: %s" % (args[0], p.returncode, p.stderr[-1000:]))
    rows = list(csv.reader(io.StringIO(p.stdout)))
    check(len(rows) >= 2 and rows[0][0] == first_col, "%s -o -: header %r" % (args[0], rows[:1]))
    bad = [r for r in rows if len(r) != len(rows[0])]
    check(not bad, "%s -o -: %d rows of another width, e.g. %r" % (args[0], len(bad), bad[:1]))
    check(os.listdir(out_dir) == [], "%s -o -: wrote files %r" % (args[0], os.listdir(out_dir)))
    try:
        import pandas
        pandas.read_csv(io.StringIO(p.stdout))
    except ImportError:
        pass
    return p


p = csv_only(["phases", "--ring", ring, "--perun", h5[0]], "scope")
check("step" in p.stdout and "step" in p.stderr, "phases -o -: the table belongs on stderr")
csv_only(["timeline", "--ring", ring, "--perun", h5[0], "--profile", profile], "t_s")
csv_only(["samples", profile], "thread")
csv_only(["samples", "--profile", profile, "--ring", ring], "thread")
# The same file through the new flag and the old positional: one answer.
a = ap("info", ring)
b = ap("info", "--ring", ring)
check(a.returncode == 0 and a.stdout == b.stdout, "info RING and info --ring RING differ")

bad = os.path.join(TMP, "bad.json")
with open(bad, "w") as f:
    f.write('{"traceEvents": [{"ph": "X", "ts": "oops"')
p = ap("samples", bad, "-o", "-")
one_line_error(p, 1, "samples on a truncated profile")
print("PASS")
