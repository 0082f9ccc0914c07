"""kill -9 a marking loop at random points, 50 times, with and without the
ring wrapping, and 30 times in discard mode on a ring that fills: every mark
committed before the kill is in the ring (or, in discard mode, counted as
dropped), in order, no gap, and no torn record is surfaced (ring_check
verifies through the real reader)."""
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
        if r.returncode != 0:
            fails += 1
            print("FAIL", ring, line)
        elif i % 10 == 0:
            print(f"wrap={wrap} {mode} run {i}: {line}")
        if os.path.exists(ring):
            os.unlink(ring)
print("failures:", fails)
sys.exit(1 if fails else 0)
