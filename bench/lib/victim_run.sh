# bench/lib/victim_run.sh - sourced by the report benches: the environment
# (ANCHOR_ROOT, BUILD, PYTHON, N), a scratch directory $W removed on exit,
# and the run to time: RUN=DIR, or a fresh recording of
# tests/victims/functions_victim.py REPS at py-spy --rate RATE under real
# perun (emulated RAPL) and real py-spy.  Sets AP (this build's
# anchorpost), RING, P (the perun file), S (the profile) and prints them.
# The caller sets REPS's default and W's name (VICTIM_RUN_TAG) first.
: "${ANCHOR_ROOT:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${BUILD:=$ANCHOR_ROOT/build}"
: "${PYTHON:=python3}"
RATE=${RATE:-500}
N=${N:-3}
AP=$BUILD/anchorpost
cd "$ANCHOR_ROOT"
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}
W=$(mktemp -d "/tmp/${VICTIM_RUN_TAG:-bench}.XXXXXX")
trap 'rm -rf "$W"' EXIT

if [ -z "${RUN:-}" ]; then
	RUN=$W/rec
	"$AP" record -o "$RUN" --rate "$RATE" --sensor emulated -- "$PYTHON" tests/victims/functions_victim.py "$REPS" >/dev/null
fi
RING=$RUN/run.ring
P=$(ls "$RUN"/perun/*.hdf5 | head -1)
S=$(ls "$RUN"/profile.*.json | head -1)
echo "run: $RUN"
ls -l "$RING" "$P" "$S" | awk '{printf "  %12d  %s\n", $5, $NF}'
