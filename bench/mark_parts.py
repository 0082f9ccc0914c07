#!/usr/bin/env python3
"""Where the mark path's nanoseconds go (issue 23): the landed libanchor
beside copies of it with one guarantee taken out at a time, timed side by
side by bench/ring_mark.c in alternating rounds (the machine is noisy;
ratios within one run are what to quote).

Variants, each built from a copy of this checkout's tracked files with the
named change patched into anchors/ring_writer.c's one-slot mark path
(event_one_slot), never shipped:
  landed        the code as it is
  -cas          the slot taken with a plain store of its BUSY word instead
                of the compare-and-swap (loses: a writer stalled for a lap
                overwrites a newer committed record; ring_format.h)
  -cas-ledger   also no count in the writers' ledger lane (loses: exact
                accounting of lost records after kill -9)
  -cas-ledger-check  also no record check word (loses: torn records told
                from whole ones)

  python3 bench/mark_parts.py [ROUNDS]     (default 7)
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 7

CAS = ("\tswitch (slot_take(&dst[0], ticket, (ticket + 1) | ANCHOR_SLOT_BUSY)) {",
       "\t__atomic_store_n(&dst[0], (ticket + 1) | ANCHOR_SLOT_BUSY, __ATOMIC_RELAXED);\n"
       "\tswitch ((enum slot_take)SLOT_TAKEN) {")
LEDGER = ("\tcount_pair(cnt, __atomic_load_n(cnt, __ATOMIC_RELAXED) + 1, ticket); /* count_record */", "\t(void)cnt;")
CHECK = ("\tw3 |= (uint64_t)anchor_check_fold(h) << 32;\n", "\t(void)h;\n")
VARIANTS = [("landed", []), ("-cas", [CAS]), ("-cas-ledger", [CAS, LEDGER]),
            ("-cas-ledger-check", [CAS, LEDGER, CHECK])]


def build(tmp, name, patches):
	src = os.path.join(tmp, "src-" + name.strip("-"))
	files = subprocess.run(["git", "ls-files"], cwd=ROOT, check=True, capture_output=True, text=True).stdout.split()
	for f in files:
		if f.startswith(("anchors/", "preload/", "include/", "python_hooks/", "scripts/")) or "/" not in f:
			os.makedirs(os.path.join(src, os.path.dirname(f)), exist_ok=True)
			shutil.copy2(os.path.join(ROOT, f), os.path.join(src, f))
	rw = os.path.join(src, "anchors", "ring_writer.c")
	text = open(rw).read()
	for old, new in patches:
		if text.count(old) != 1:
			sys.exit(f"mark_parts: anchors/ring_writer.c: the line to patch for {name} is not there once "
				 f"(the mark path changed; update bench/mark_parts.py): {old.strip()!r}")
		text = text.replace(old, new)
	open(rw, "w").write(text)
	r = subprocess.run(["make", "-s", "-j2", "build/libanchor.so"], cwd=src, capture_output=True, text=True)
	if r.returncode:
		sys.exit(f"mark_parts: building {name} failed:\n{r.stdout}{r.stderr}")
	return os.path.join(src, "build")


def main():
	tmp = tempfile.mkdtemp(prefix="mark_parts.")
	try:
		libs = [(n, build(tmp, n, p)) for n, p in VARIANTS]
		exe = os.path.join(tmp, "ring_mark")
		subprocess.run(["cc", "-std=c11", "-O2", "-D_GNU_SOURCE", "-I" + os.path.join(ROOT, "include"), "-pthread",
				"-o", exe, os.path.join(ROOT, "bench", "ring_mark.c"), "-L" + libs[0][1], "-lanchor"], check=True)
		res = {n: {"clock": [], "warm": [], "t2": []} for n, _ in VARIANTS}
		for _ in range(ROUNDS):
			for n, lib in libs:
				ring = os.path.join(tmp, "b.ring")
				if os.path.exists(ring):
					os.remove(ring)
				env = dict(os.environ, LD_LIBRARY_PATH=lib, ANCHOR_FILE=ring, ANCHOR_RING_SIZE="64M",
					   RING_MARK_CPU_TIME="1")
				out = subprocess.run([exe, "5000000", "1048576"], env=env, check=True, capture_output=True,
						     text=True).stdout
				if "ring attached: yes" not in out:
					sys.exit(f"mark_parts: {n}: no ring attached:\n{out}")
				res[n]["clock"].append(float(re.search(r"clock_gettime\S*\s+([\d.]+) ns", out).group(1)))
				res[n]["warm"].append(float(re.search(r"warm ring\s+([\d.]+) ns", out).group(1)))
				res[n]["t2"].append(float(re.search(r"([\d.]+)x one thread", out).group(1)))
		base = statistics.median(a / b for a, b in zip(res["landed"]["warm"], res["landed"]["clock"]))
		lw = statistics.median(res["landed"]["warm"])
		print(f"{ROUNDS} rounds, variants alternating; CPU time; 5 M marks per case, 2^20-slot ring (64 MiB)")
		print("| variant | clock ns (median) | mark ns (median) | mark / clock (median of rounds) "
		      "| mark ns vs landed | 2 threads / 1 (wall) |")
		print("|---|---:|---:|---:|---:|---:|")
		for n, _ in VARIANTS:
			r = res[n]
			ratio = statistics.median(a / b for a, b in zip(r["warm"], r["clock"]))
			mw = statistics.median(r["warm"])
			print(f"| {n} | {statistics.median(r['clock']):.1f} | {mw:.1f} | {ratio:.2f}x | "
			      f"{mw - lw:+.1f} | {statistics.median(r['t2']):.2f}x |")
		print(f"landed mark / clock {base:.2f}x (goal in DESIGN.md 1.2x)")
	finally:
		shutil.rmtree(tmp, ignore_errors=True)


main()
