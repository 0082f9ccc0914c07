"""kill -9 a marking loop at random points, 50 times, with and without the
ring wrapping, and 30 times in discard mode on a ring that fills: every mark
committed before the kill is in the ring (or, in discard mode, counted as
dropped), in order, no gap, and no torn record is surfaced (ring_check
verifies through the real reader).  Every round also checks the ledger
(ring_check account): written = read + overwritten + dropped + torn
exactly, with the writers' count equal to the marks committed plus at most
the one in flight when the kill came.

Then a storm: four writer processes on one small ring (overwrite and
discard), two of them killed at random points while the others go on
wrapping the ring over what the killed ones wrote; the same exact account
over every round."""
import os, random, signal, subprocess, sys, time

B = os.environ["BUILD"]
T = os.environ["ANCHOR_TEST_TMP"]
rng = random.Random(1234)
fails = 0
for wrap, mode, rounds in ((False, "overwrite", 50), (True, "overwrite", 50), (True, "discard", 30)):
    for i in range(rounds):
        ring = os.path.join(T, f"k{int(wrap)}{mode[0]}_{i}.ring")
        prog = os.path.join(T, f"k{int(wrap)}{mode[0]}_{i}.progress")
        with open(prog, "wb") as f:
            f.write((-1).to_bytes(8, "little", signed=True) + bytes(4088))
        env = dict(os.environ, ANCHOR_FILE=ring, ANCHOR_RING_MODE=mode)
        # 1024 slots = 64 KiB: a marking loop wraps it within milliseconds.
        env["ANCHOR_RING_SIZE"] = "64K" if wrap else "256M"
        p = subprocess.Popen([f"{B}/victims/marker", "loop", prog], env=env)
        time.sleep(rng.uniform(0.005, 0.08))
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        with open(prog, "rb") as f:
            last = int.from_bytes(f.read(8), "little", signed=True)
        r = subprocess.run([f"{B}/victims/ring_check", "loop", ring, str(last)],
                           capture_output=True, text=True)
        line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr
        a = subprocess.run([f"{B}/victims/ring_check", "account", ring], input=f"killed loop {last}\n",
                           capture_output=True, text=True) if last >= 0 else None
        if r.returncode != 0:
            fails += 1
            print("FAIL", ring, line)
        elif a is not None and a.returncode != 0:
            fails += 1
            print("FAIL account", ring, a.stdout)
        elif i % 10 == 0:
            print(f"wrap={wrap} {mode} run {i}: {line}")
        if os.path.exists(ring):
            os.unlink(ring)

# The storm: writers w0..w3 mark COUNT each; w0 and w1 are killed early.
COUNT = 300000
for mode, rounds in (("overwrite", 12), ("discard", 8)):
    for i in range(rounds):
        ring = os.path.join(T, f"storm{mode[0]}_{i}.ring")
        env = dict(os.environ, ANCHOR_FILE=ring, ANCHOR_RING_MODE=mode, ANCHOR_RING_SIZE="64K")
        procs, progs = [], []
        for w in range(4):
            prog = os.path.join(T, f"storm{mode[0]}_{i}_{w}.progress")
            with open(prog, "wb") as f:
                f.write((-1).to_bytes(8, "little", signed=True) + bytes(4088))
            progs.append(prog)
            procs.append(subprocess.Popen([f"{B}/victims/marker", "loop", prog, f"w{w}", str(COUNT)], env=env))
        for w in (0, 1):
            time.sleep(rng.uniform(0.001, 0.03))
            os.kill(procs[w].pid, signal.SIGKILL)
        lines = []
        for w, p in enumerate(procs):
            rc = p.wait()
            with open(progs[w], "rb") as f:
                last = int.from_bytes(f.read(8), "little", signed=True)
            if rc == 0:
                lines.append(f"stream w{w} {COUNT}")
            elif rc == -signal.SIGKILL:
                lines.append(f"killed w{w} {last}")
            else:
                fails += 1
                print(f"FAIL writer w{w} exited {rc}")
        a = subprocess.run([f"{B}/victims/ring_check", "account", ring], input="\n".join(lines) + "\n",
                           capture_output=True, text=True)
        if a.returncode != 0:
            fails += 1
            print("FAIL storm account", ring, lines, a.stdout)
        elif i % 4 == 0:
            print(f"storm {mode} run {i}: {lines}\n" + "\n".join(a.stdout.splitlines()[-3:]))
        os.unlink(ring)
print("failures:", fails)
sys.exit(1 if fails else 0)
