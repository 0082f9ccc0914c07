#!/usr/bin/env bash
# compare_outputs.sh - run anchorpost's commands on a fixed set of inputs and
# keep every output, stdout, stderr and exit status, so that a refactor can
# be held byte-identical against the binary it started from (issue 24).
#
#   tools/compare_outputs.sh run ANCHORPOST OUTDIR [RECDIR]
#   tools/compare_outputs.sh cmp REFDIR NEWDIR
#
# RECDIR: a recording (run.ring, perun/*.hdf5, profile.chrometrace.json),
# e.g. the demo directory tests/report/t_e2e_demo_slow.sh leaves in
# $ANCHOR_TEST_TMP/demo; without it only tests/data is used.  Each case runs
# in its own fixed directory (/tmp/anchorpost-compare/NAME), because some
# outputs and messages name the output paths: the same path in both runs
# keeps them comparable.  `cmp` exits 1 and names every file that differs.
#
# EXTRA_RECS="NAME=DIR NAME=DIR ..." (space separated): more recordings, each
# DIR with run.ring, perun/*.hdf5 and, if it has one, a profile (a py-spy
# profile.*.json, or a torch.profiler trace: *.pt.trace.json[.gz],
# trace.json[.gz]), for what RECDIR's demo does not reach: a torch trace
# (ops.csv, layers), ms counters (scope "counters"), a device timeline (GPU
# groups).  Each runs report, phases (-o, --by-process, --occurrences, times
# only), functions (with a profile) and timeline, in cases named NAME_...
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:?usage: $0 run ANCHORPOST OUTDIR [RECDIR] | cmp REFDIR NEWDIR}

if [ "$mode" = cmp ]; then
	ref=${2:?REFDIR}; new=${3:?NEWDIR}; bad=0; n=0
	while IFS= read -r f; do
		n=$((n + 1))
		if [ ! -e "$new/$f" ]; then echo "missing: $f"; bad=1
		elif ! cmp -s "$ref/$f" "$new/$f"; then echo "differs: $f"; bad=1; fi
	done < <(cd "$ref" && find . -type f | sort)
	while IFS= read -r f; do
		[ -e "$ref/$f" ] || { echo "extra: $f"; bad=1; }
	done < <(cd "$new" && find . -type f | sort)
	[ $bad = 0 ] && echo "identical: $n files"
	exit $bad
fi

AP=$(cd "$(dirname "${2:?ANCHORPOST}")" && pwd)/$(basename "$2")
OUT=${3:?OUTDIR}
REC=${4:-}
for rec in ${EXTRA_RECS:-}; do
	# a recording that is not there would leave cases that match by accident
	if [[ $rec != ?*=?* ]] || [ ! -f "${rec#*=}/run.ring" ] || ! ls "${rec#*=}"/perun/*.hdf5 >/dev/null 2>&1; then
		echo "$0: EXTRA_RECS: '$rec' is not NAME=DIR with DIR/run.ring and DIR/perun/*.hdf5" >&2
		exit 2
	fi
done
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
WORK=/tmp/anchorpost-compare
D=$here/tests/data

# case NAME ARGS...: run `anchorpost ARGS` in WORK/NAME, keep what it left.
case_() {
	local name=$1; shift
	rm -rf "${WORK:?}/$name"; mkdir -p "$WORK/$name"
	(cd "$WORK/$name" && "$AP" "$@" >stdout 2>stderr </dev/null; echo $? >rc)
	rm -rf "${OUT:?}/$name"; cp -r "$WORK/$name" "$OUT/$name"
}

# Inputs that come with the repository.
case_ samples_speedscope samples "$D/pyspy/victim.speedscope.json"
case_ samples_speedscope_o samples "$D/pyspy/victim.speedscope.json" -o s.csv
case_ samples_chrometrace_o samples "$D/pyspy/victim.chrometrace.json" -o s.csv --stack-text
case_ samples_raw_o samples "$D/pyspy/victim.raw.txt" -o s.csv
case_ samples_byframe samples "$D/pyspy/victim.speedscope.json" --by-frame
case_ samples_byframe_o samples "$D/pyspy/victim.chrometrace.json" --by-frame -o f.csv
for h in "$D"/perun/*.hdf5; do
	b=$(basename "$h" .hdf5)
	case_ "perun_$b" perun "$h"
	case_ "perun_${b}_o" perun "$h" -o p.csv
	case_ "perun_${b}_regions" perun "$h" --regions
done

# Bad inputs: one line, an exit status, no file left behind.
printf 'not a ring\n' > /tmp/anchorpost-compare-garbage
case_ bad_dump_missing dump /nonexistent.ring
case_ bad_dump_garbage dump /tmp/anchorpost-compare-garbage
case_ bad_perun_garbage perun /tmp/anchorpost-compare-garbage -o p.csv
case_ bad_samples_garbage samples /tmp/anchorpost-compare-garbage -o s.csv
case_ bad_samples_full samples "$D/pyspy/victim.speedscope.json" -o /dev/full
case_ bad_usage phases --perun x
case_ bad_unknown nosuchcommand

if [ -n "$REC" ]; then
	R=$REC/run.ring
	P=$(ls "$REC"/perun/*.hdf5 | head -1)
	S=$REC/profile.chrometrace.json
	head -c 100000 "$R" > /tmp/anchorpost-compare-trunc.ring
	case_ info info "$R"
	case_ dump dump "$R"
	case_ dump_stacks_o dump "$R" --stacks -o d.csv
	case_ phases phases --ring "$R" --perun "$P"
	case_ phases_o phases --ring "$R" --perun "$P" -o phases.csv
	case_ phases_byproc phases --ring "$R" --perun "$P" --by-process -o phases.csv
	case_ phases_times phases --ring "$R"
	case_ phases_times_o phases --ring "$R" -o phases.csv
	case_ phases_occ phases --ring "$R" --perun "$P" --occurrences
	case_ phases_occ_o phases --ring "$R" --perun "$P" --occurrences -o occ.csv
	case_ phases_rings phases --rings "$R" --perun "$P" --by-rank --stragglers st.csv -o phases.csv
	case_ stragglers stragglers --rings "$R" --perun "$P"
	case_ functions functions --ring "$R" --perun "$P" --profile "$S"
	case_ functions_o functions --ring "$R" --perun "$P" --profile "$S" -o functions.csv \
		--speedscope-out e.speedscope.json --stacks-out stacks.csv --samples-out samples.csv
	case_ timeline timeline --ring "$R" --perun "$P"
	case_ timeline_o timeline --ring "$R" --perun "$P" -o tl.csv --bin 0.05
	case_ timeline_prof_o timeline --ring "$R" --perun "$P" --profile "$S" -o tl.csv
	case_ perun_ring_o perun "$P" --ring "$R" -o p.csv
	case_ samples_ring_o samples "$S" --ring "$R" -o s.csv
	case_ samples_ring samples "$S" --ring "$R"
	case_ report report --ring "$R" --perun "$P" --profile "$S" -d rep
	case_ report_noprof report --ring "$R" --perun "$P" -d rep
	case_ report_times report --ring "$R" --profile "$S" -d rep
	# `anchorpost` alone and `report DIR`, in a directory holding the run
	rm -rf "$WORK/_run"; mkdir -p "$WORK/_run/perun"
	ln -s "$R" "$WORK/_run/run.ring"; ln -s "$P" "$WORK/_run/perun/"
	(cd "$WORK/_run" && "$AP" >stdout 2>stderr </dev/null; echo $? >rc)
	rm -rf "$OUT/here"; mkdir -p "$OUT/here"; cp "$WORK/_run/"{stdout,stderr,rc,phases.csv} "$OUT/here/" 2>/dev/null
	case_ report_dir report "$WORK/_run" -d rep
	# run_find's refusals: two perun files, no ring
	rm -rf "$WORK/_two"; mkdir -p "$WORK/_two/perun"
	ln -s "$R" "$WORK/_two/run.ring"; ln -s "$P" "$WORK/_two/perun/a.hdf5"; ln -s "$P" "$WORK/_two/perun/b.hdf5"
	(cd "$WORK/_two" && "$AP" >stdout 2>stderr </dev/null; echo $? >rc)
	rm -rf "$OUT/bad_here_two"; mkdir -p "$OUT/bad_here_two"; cp "$WORK/_two/"{stdout,stderr,rc} "$OUT/bad_here_two/"
	case_ bad_report_dir_two report "$WORK/_two" -d rep
	mkdir -p "$WORK/_none"
	case_ bad_report_dir_none report "$WORK/_none" -d rep
	# bad inputs against the recording
	case_ bad_phases_trunc phases --ring /tmp/anchorpost-compare-trunc.ring --perun "$P" -o phases.csv
	case_ bad_phases_perun phases --ring "$R" --perun /tmp/anchorpost-compare-garbage -o phases.csv
	case_ bad_functions_prof functions --ring "$R" --perun "$P" --profile /tmp/anchorpost-compare-garbage -o f.csv
	case_ bad_timeline_dir timeline --ring "$R" --perun "$P" -o /nonexistent/dir/tl.csv
	case_ bad_phases_perun070 phases --ring "$R" --perun "$D/perun/perun070_sampling_rate.hdf5" -o phases.csv
	case_ bad_report_perun070 report --ring "$R" --perun "$D/perun/perun070_sampling_rate.hdf5" -d rep
	case_ bad_perun_ring_missing perun "$P" --ring /nonexistent.ring -o p.csv
	case_ bad_samples_ring_garbage samples "$S" --ring /tmp/anchorpost-compare-garbage -o s.csv
	case_ bad_phases_full phases --ring "$R" --perun "$P" -o /dev/full
	case_ bad_functions_full functions --ring "$R" --perun "$P" --profile "$S" -o /dev/full
	case_ bad_timeline_bins timeline --ring "$R" --perun "$P" --bin 0.0001 -o tl.csv
	: > "$WORK/_repfile"
	case_ bad_report_onfile report --ring "$R" --perun "$P" -d "$WORK/_repfile"
	rm -rf "$WORK/_inp"; mkdir -p "$WORK/_inp"; ln -s "$R" "$WORK/_inp/phases.csv"
	case_ bad_report_link report --ring "$R" --perun "$P" -d "$WORK/_inp"
fi

# EXTRA_RECS: NAME=DIR each, its profile found by name (none: no --profile).
for rec in ${EXTRA_RECS:-}; do
	n=${rec%%=*}; dir=$(cd "${rec#*=}" && pwd)
	R=$dir/run.ring
	P=$(ls "$dir"/perun/*.hdf5 | head -1)
	S=; prof=()
	for f in "$dir"/profile.*.json "$dir"/*.pt.trace.json "$dir"/*.pt.trace.json.gz \
		"$dir"/trace.json "$dir"/trace.json.gz; do
		[ -f "$f" ] && { S=$f; prof=(--profile "$S"); break; }
	done
	case_ "${n}_report" report --ring "$R" --perun "$P" "${prof[@]}" -d rep
	case_ "${n}_phases_o" phases --ring "$R" --perun "$P" -o phases.csv
	case_ "${n}_phases_byproc" phases --ring "$R" --perun "$P" --by-process -o phases.csv
	case_ "${n}_phases_occ_o" phases --ring "$R" --perun "$P" --occurrences -o occ.csv
	[ -n "$S" ] && case_ "${n}_functions_o" functions --ring "$R" --perun "$P" --profile "$S" -o functions.csv \
		--speedscope-out e.speedscope.json
	case_ "${n}_timeline_o" timeline --ring "$R" --perun "$P" -o tl.csv
	case_ "${n}_sensors_o" sensors "$R" -o s.csv
	case_ "${n}_phases_times_o" phases --ring "$R" -o phases.csv
done
echo "outputs in $OUT"
