#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS - build and run every tests/fuzz/fuzz_*.c
# libFuzzer target, SECONDS split evenly between them.
#
# Each target declares in its opening comment:
#   fuzz-sources: the project .c files it links (paths from the root)
#   fuzz-libs:    pkg-config names or plain -l names (optional)
#   fuzz-seeds:   seed directories and/or files (optional)
# Targets are built with clang -fsanitize=fuzzer,address,undefined into
# build/fuzz/; each runs on its own working corpus tests/fuzz/corpus-NAME/
# (git-ignored), first filled from its seeds plus truncated copies of them.
# Crashes are written to build/fuzz/NAME-crash-* and fail the run.
set -u
cd "$(dirname "$0")/../.."
secs=${1:-60}
out=${BUILD:-build}/fuzz
mkdir -p "$out"
CC=${FUZZ_CC:-clang}
command -v "$CC" >/dev/null || { echo "fuzz: $CC not found (scripts/install-deps.sh installs clang)"; exit 77; }
targets=(tests/fuzz/fuzz_*.c)
[ -e "${targets[0]}" ] || { echo "fuzz: no targets"; exit 0; }
per=$(( secs / ${#targets[@]} )); [ $per -ge 1 ] || per=1
field() { sed -n "s/^ \* $1: //p" "$2" | head -n 1; }
fail=0
build() {
	local t=$1 name=$2 srcs libs l ldflags="" cflags=""
	srcs=$(field fuzz-sources "$t"); libs=$(field fuzz-libs "$t")
	for l in $libs; do
		if pkg-config --exists "$l" 2>/dev/null; then
			cflags+=" $(pkg-config --cflags "$l")"; ldflags+=" $(pkg-config --libs "$l")"
		else
			ldflags+=" -l$l"
		fi
	done
	# shellcheck disable=SC2086
	$CC -std=c11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-I. -Iinclude -Ipostproc -Itests/fuzz $cflags -o "$out/fuzz_$name" "$t" $srcs $ldflags -lm
}
# Every target is compiled first, all at once (each is one clang process,
# seconds of CPU), then fuzzed one after another for its share of SECONDS.
declare -A built
for t in "${targets[@]}"; do
	name=$(basename "$t" .c); name=${name#fuzz_}
	build "$t" "$name" & built[$name]=$!
done
for t in "${targets[@]}"; do
	name=$(basename "$t" .c); name=${name#fuzz_}
	seeds=$(field fuzz-seeds "$t")
	bin=$out/fuzz_$name
	if ! wait "${built[$name]}"; then
		echo "fuzz: $name: build failed"; fail=1; continue
	fi
	corpus=tests/fuzz/corpus-$name
	mkdir -p "$corpus"
	for s in $seeds; do
		for f in $( [ -d "$s" ] && find "$s" -type f || echo "$s"); do
			[ -f "$f" ] || continue
			b=$(basename "$f"); sz=$(stat -c %s "$f")
			[ -e "$corpus/seed-$b" ] && continue
			# Large seeds are cut: libFuzzer works best on small inputs.
			head -c 65536 "$f" >"$corpus/seed-$b"
			for frac in 2 3 7; do head -c $(( (sz < 65536 ? sz : 65536) / frac )) "$f" >"$corpus/cut$frac-$b"; done
		done
	done
	echo "fuzz: $name for ${per}s"
	if ! "$bin" -max_total_time="$per" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$out/$name-crash-" -print_final_stats=1 "$corpus" >"$out/$name.log" 2>&1; then
		echo "fuzz: $name: FAILED, see $out/$name.log"; tail -n 30 "$out/$name.log"; fail=1
	else
		grep -E "^stat::number_of_executed_units|^Done" "$out/$name.log" | sed "s/^/fuzz: $name: /"
	fi
done
exit $fail
