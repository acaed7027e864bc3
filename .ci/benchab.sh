#!/usr/bin/env bash
# Compares BenchmarkFullStack (extensions/flight) between two versions of
# the code by CPU time, in the same interleaved rounds: each round runs
# every variant of both test binaries, the older first in odd rounds and
# the newer first in even ones, so that the machine's load, which moves
# the full stack's CPU time by more than most changes do, falls on both.
# CPU time per run is the loop's alone, (C(N2) - C(N1)) / (N2 - N1) with
# C(N) = cpu-ns/op x N at N1 = 45,000 and N2 = 245,000 runs, as
# .ci/benchratios.sh takes it (see docs/benchmarking.md).
#
# Usage: .ci/benchab.sh [--rounds R] [--variants "traced-only spills-0 spills-2000"] [--paired] OLD [NEW]
#
# --paired runs the two binaries' measurements of a variant at the same
# time, each pinned to a CPU of its own (taskset; the CPUs swapped from
# round to round), instead of one after the other: both then see the same
# moment of the machine, whose load moves a run's CPU time by more than
# most changes do. Each slows the other a little (they share the
# last-level cache and the memory bus), the same for both, so use it to
# compare two versions, not for ratios to traced-only. It needs two CPUs.
#
# OLD and NEW are git revisions; without NEW, the working tree (with its
# uncommitted changes) is the newer. Prints each round's values, then per
# variant the median of each binary's values, the median of the per-round
# differences (NEW - OLD) and, for the recorder's variants, the medians of
# the per-round ratios to traced-only.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=5
variants="traced-only spills-0 spills-2000"
paired=""
revs=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--rounds) rounds="$2"; shift 2 ;;
	--variants) variants="$2"; shift 2 ;;
	--paired) paired=1; shift ;;
	-*) echo "usage: $0 [--rounds R] [--variants V] [--paired] OLD [NEW]" >&2; exit 2 ;;
	*) revs+=("$1"); shift ;;
	esac
done
if [[ ${#revs[@]} -lt 1 || ${#revs[@]} -gt 2 ]]; then
	echo "usage: $0 [--rounds R] [--variants V] [--paired] OLD [NEW]" >&2
	exit 2
fi
if [[ -n "$paired" ]] && { ! command -v taskset >/dev/null || [[ "$(nproc)" -lt 2 ]]; }; then
	echo "$0: --paired needs taskset and two CPUs" >&2
	exit 2
fi

tmp="$(mktemp -d)"
cleanup() {
	for w in "$tmp"/src-*; do
		[[ -d "$w" ]] && git worktree remove --force "$w" >/dev/null 2>&1 || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

# build NAME REV: the flight test binary of REV (the working tree when
# REV is empty) as $tmp/NAME.test.
build() {
	local name="$1" rev="$2" src=.
	if [[ -n "$rev" ]]; then
		src="$tmp/src-$name"
		git worktree add --detach --quiet "$src" "$rev"
	fi
	echo "building $name (${rev:-working tree})" >&2
	(cd "$src" && go test -c -o "$tmp/$name.test" ./extensions/flight)
}
build old "${revs[0]}"
build new "${revs[1]:-}"

# loopcpu BIN VARIANT N [CPU]: cpu-ns/op of the variant at N runs (pinned
# to CPU when given).
loopcpu() {
	local pin=()
	[[ -n "${4:-}" ]] && pin=(taskset -c "$4")
	"${pin[@]}" env GOMAXPROCS=1 "$1" -test.run '^$' -test.bench "^BenchmarkFullStack\$/^$2\$" -test.benchtime "$3x" 2>/dev/null |
		awk '{for (i = 2; i <= NF; i++) if ($i == "cpu-ns/op") v = $(i-1)} END {if (v == "") exit 1; print v}'
}

# perrun BIN VARIANT [CPU]: the loop's CPU time a run, µs.
perrun() {
	local a b
	a=$(loopcpu "$1" "$2" 45000 "${3:-}") || { echo "$1 $2: no cpu-ns/op" >&2; exit 1; }
	b=$(loopcpu "$1" "$2" 245000 "${3:-}") || { echo "$1 $2: no cpu-ns/op" >&2; exit 1; }
	awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", (b * 245000 - a * 45000) / 200000 / 1000}'
}

results="$tmp/results"
: >"$results"
for ((r = 1; r <= rounds; r++)); do
	order="old new"
	((r % 2 == 0)) && order="new old"
	echo "round $r of $rounds" >&2
	if [[ -n "$paired" ]]; then
		cold=0 cnew=1
		((r % 2 == 0)) && cold=1 cnew=0
		for v in $variants; do
			perrun "$tmp/old.test" "$v" "$cold" >"$tmp/t-old" &
			po=$!
			perrun "$tmp/new.test" "$v" "$cnew" >"$tmp/t-new" &
			pn=$!
			wait "$po" || exit 1
			wait "$pn" || exit 1
			for bin in old new; do
				echo "$r $bin $v $(cat "$tmp/t-$bin")" >>"$results"
			done
			echo "$r $v old=$(cat "$tmp/t-old") new=$(cat "$tmp/t-new")"
		done
		continue
	fi
	for bin in $order; do
		line="$r $bin"
		for v in $variants; do
			t=$(perrun "$tmp/$bin.test" "$v")
			echo "$r $bin $v $t" >>"$results"
			line="$line $v=$t"
		done
		echo "$line"
	done
done

how="interleaved"
[[ -n "$paired" ]] && how="paired (both at once, pinned)"
echo "CPU time per run (µs), medians of $rounds $how rounds; OLD=${revs[0]} NEW=${revs[1]:-working tree}:"
awk -v variants="$variants" -v paired="$paired" '
function median(arr, n,    i, j, t) {
	for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j+1] = arr[j]; arr[j+1] = t }
	return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
}
{ v[$1, $2, $3] = $4; if ($1 > R) R = $1 }
END {
	nv = split(variants, vs, " ")
	printf "  %-12s %9s %9s %13s", "variant", "old", "new", "new - old"
	printf "   %s\n", paired ? "" : "ratio to traced-only (old -> new)"
	for (k = 1; k <= nv; k++) {
		name = vs[k]
		delete o; delete n; delete d; delete ro; delete rn; nr = 0
		for (r = 1; r <= R; r++) {
			o[r] = v[r, "old", name]; n[r] = v[r, "new", name]; d[r] = n[r] - o[r]
			if (!paired && name != "traced-only" && (r, "old", "traced-only") in v) {
				nr++
				ro[nr] = o[r] / v[r, "old", "traced-only"]; rn[nr] = n[r] / v[r, "new", "traced-only"]
			}
		}
		printf "  %-12s %9.2f %9.2f %+13.2f", name, median(o, R), median(n, R), median(d, R)
		if (nr > 0) printf "   %.3f -> %.3f", median(ro, nr), median(rn, nr)
		printf "\n"
	}
}' "$results"
