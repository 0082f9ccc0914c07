#!/usr/bin/env bash
# ANCHOR_STACKS=1 inside a host that is hard on unwinders (issue 15,
# point 4): marks from a 100 us timer's signal handler while the main
# thread loops dlopen/dlclose (libunwind deadlocked here in the loader's
# lock, with the signal blocked: a hang, caught by `timeout`, not timed);
# errno kept on a thread's first mark; no file descriptor opened by a
# mark (libunwind kept a validation pipe on fds the host later reused);
# handler marks still carry stacks through the signal frame.
set -uo pipefail
T=$ANCHOR_TEST_TMP
M=$BUILD/victims/marker
LIB=$BUILD/libanchor.so
AP=$BUILD/anchorpost
PY=${PYTHON:-python3}
LZ=$(ldconfig -p 2>/dev/null | awk '/libz\.so\.1 / {print $NF; exit}')
[ -n "$LZ" ] || LZ=libm.so.6
fails=0

ANCHOR_STACKS=1 ANCHOR_FILE=$T/dl.ring timeout -k 5 120 "$M" dlsig 2 "$LZ" >"$T/dl.out"
rc=$?
cat "$T/dl.out"
if [ $rc -ne 0 ]; then echo "FAIL marker dlsig exit $rc (124/137: hung)"; fails=$((fails + 1)); fi
grep -q '^errno kept$' "$T/dl.out" || { echo "FAIL errno changed by a thread's first mark"; fails=$((fails + 1)); }
n=$(awk '/signal marks/ {print $NF}' "$T/dl.out")
"$AP" dump --stacks "$T/dl.ring" -o "$T/dl.csv"
withstack=$(grep ',mark,in-handler,' "$T/dl.csv" | grep -c ',0x' || true)
echo "signal marks $n, in the ring with a stack: $withstack"
[ "${n:-0}" -gt 0 ] && [ "$withstack" -gt 0 ] || { echo "FAIL no handler marks with stacks"; fails=$((fails + 1)); }

# No descriptor appears across marks with stacks.
LD_PRELOAD=$LIB ANCHOR_STACKS=1 ANCHOR_FILE=$T/fd.ring $PY -c '
import os, anchor
before = sorted(os.listdir("/proc/self/fd"))
for i in range(2000):
    anchor.mark("m")
    with anchor.phase("p"):
        pass
after = sorted(os.listdir("/proc/self/fd"))
print("fds", before, after)
raise SystemExit(0 if before == after else 1)
' || { echo "FAIL a mark with a stack opened a descriptor"; fails=$((fails + 1)); }
echo "failures: $fails"
[ $fails -eq 0 ]
