#!/usr/bin/env bash
# The ring cut by another process while a host attaches to it (issue 23,
# point 1, "at any moment"): between publishing (or finding) the ring and
# reading its geometry through the mapping, a truncation killed the host
# with SIGBUS before the guard was installed (seen once in 30 rounds of a
# Python host beside stress-ng --cpu 4, tests/ring/t_host_truncated_slow.py).
# victims/attach_cut stops the writer exactly there (ring_writer.c's test
# hook) and cuts the file to 0 bytes, as a creator and as a process that
# attaches to an existing ring: the open must fail with one line saying
# so, and the host go on and exit 0.  The code before died of SIGBUS in
# both (exit 135).
set -uo pipefail
T=$ANCHOR_TEST_TMP
V=$BUILD/victims/attach_cut
fails=0
for mode in create attach; do
	ring=$T/cut-$mode.ring
	rm -f "$ring"
	out=$("$V" "$ring" "$mode" 2>"$T/err-$mode")
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "FAIL $mode: the host exited $rc (SIGBUS is 135)"; fails=$((fails + 1)); continue
	fi
	if ! grep -q '^open: -5: .*lost its pages while attaching' <<<"$out" || ! grep -q '^survived$' <<<"$out"; then
		echo "FAIL $mode: stdout $(tr '\n' '|' <<<"$out")"; fails=$((fails + 1)); continue
	fi
	if [ -s "$T/err-$mode" ]; then
		echo "FAIL $mode: the writer wrote to stderr itself: $(head -c 300 "$T/err-$mode")"; fails=$((fails + 1)); continue
	fi
	echo "ok   $mode: cut while attaching: the open fails with one message, the host exits 0"
done
[ $fails -eq 0 ] && echo PASS || echo "$fails failure(s)"
exit $((fails > 0))
