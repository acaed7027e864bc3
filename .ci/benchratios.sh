#!/usr/bin/env bash
# Prints the performance ratios the project tracks, by CPU time per
# operation over interleaved rounds of prebuilt test binaries (and, with
# --instructions, by instruction counts under valgrind's callgrind):
#
#   BenchmarkRun / BenchmarkFloor                         (harness)
#   (TracedRun - UntracedRun) / OTelFloor                 (extensions/tracing)
#   (TracedRun - UntracedRun - OTelFloor) / OTelFloor     (the extension's own
#       work beside the SDK's; OTelFloor replays the very spans of a traced
#       run, so the ratio above is 1 plus this one)
#   the same two without LangSmith's mirror attributes    (…NoMirror)
#   (TracedRunNoMirror - UntracedRun) / (HandOTelRun - UntracedRun)
#       (extensions/tracing: the extension against the same spans written
#       by hand with raw OpenTelemetry calls, each value computed on each
#       run; the floor the tracing target means)
#   FullStack spills-0 and spills-2000 / traced-only      (extensions/flight)
#   FullStack spills-2000 / spills-0                      (flat over 2,000
#       spills: the same runs after 2,000 spilled results)
#
# CPU time per op is (CPU(N2) - CPU(N1)) / (N2 - N1): the process's user +
# system time at two -test.benchtime counts, so that start-up and set-up
# cancel out. For the benchmarks marked "loop" (BenchmarkFullStack), CPU(N)
# is the process's CPU time over the measured loop alone, which the
# benchmark reports as cpu-ns/op: its set-up (2,000 spills) varies by tenths
# of a second from one process to the next, which the difference of two
# whole-process times would keep. Each round runs every benchmark once; the medians of the
# per-round values and of the per-round ratios are printed. See
# docs/benchmarking.md.
#
# Usage: .ci/benchratios.sh [--rounds R] [--instructions]
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=5
instructions=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--rounds) rounds="$2"; shift 2 ;;
	--instructions) instructions=1; shift ;;
	*) echo "usage: $0 [--rounds R] [--instructions]" >&2; exit 2 ;;
	esac
done

bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
echo "building test binaries" >&2
go test -c -o "$bin/harness.test" ./harness
go test -c -o "$bin/tracing.test" ./extensions/tracing
go test -c -o "$bin/flight.test" ./extensions/flight

# name binary benchmark N1 N2. Each N2 - N1 is about two seconds of CPU
# or more, so that a burst of the machine's load does not land on one side
# of a ratio (docs/benchmarking.md, "CPU time per operation", step 5, has
# the rounds that showed it). FullStack's spills-2000 set-up, about 1.5 s,
# varies by a few tenths: its N2 - N1 must be worth seconds. FullStack's
# N1 is past the flight recorder's warm-up, its buffers growing to their
# size and its first snapshot of a full span buffer, about 1 s in, and
# N2 - N1 spans several snapshot intervals: with N1 = 5,000 (0.15 s) and
# N2 = 45,000, the window held that one-time work every time and one
# snapshot or two by chance, and the per-op values of one binary ranged
# over 29-38 µs.
benches=(
	"run harness BenchmarkRun\$ 250000 1250000"
	"floor harness BenchmarkFloor\$ 500000 2500000"
	"untraced tracing BenchmarkUntracedRun\$ 200000 1000000"
	"traced tracing BenchmarkTracedRun\$ 20000 100000"
	"otelfloor tracing BenchmarkOTelFloor\$ 20000 120000"
	"traced-nm tracing BenchmarkTracedRunNoMirror\$ 20000 100000"
	"otelfloor-nm tracing BenchmarkOTelFloorNoMirror\$ 20000 120000"
	"handotel tracing BenchmarkHandOTelRun\$ 20000 100000"
	"fs-traced flight BenchmarkFullStack\$/traced-only\$ 45000 245000 loop"
	"fs-spills0 flight BenchmarkFullStack\$/spills-0\$ 45000 245000 loop"
	"fs-spills2000 flight BenchmarkFullStack\$/spills-2000\$ 45000 245000 loop"
)

# cpu BIN BENCH N: user+sys seconds of one run (GOMAXPROCS=1: one
# goroutine's work, not the scheduler's spinning on idle cores), in
# milliseconds from the shell's own timer (/usr/bin/time prints
# hundredths only)
cpu() {
	local out TIMEFORMAT='%3U %3S'
	out="$({ time GOMAXPROCS=1 "$bin/$1.test" -test.run '^$' -test.bench "$2" -test.benchtime "${3}x" >/dev/null 2>&1; } 2>&1 | tail -1)"
	awk '{print $1 + $2}' <<<"$out"
}

# loopcpu BIN BENCH N: the CPU seconds of the measured loop, from the
# cpu-ns/op the benchmark reports
loopcpu() {
	local v
	v="$(GOMAXPROCS=1 "$bin/$1.test" -test.run '^$' -test.bench "$2" -test.benchtime "${3}x" 2>/dev/null |
		awk '{for (i = 2; i <= NF; i++) if ($i == "cpu-ns/op") print $(i - 1)}' | tail -1)"
	if [[ -z "$v" ]]; then
		echo "benchratios: $2 reported no cpu-ns/op" >&2
		exit 1
	fi
	awk -v v="$v" -v n="$3" 'BEGIN { printf "%.6f", v * n / 1e9 }'
}

# per-op value (µs) of one benchmark, from two counts; MODE "loop" reads
# the loop's CPU time the benchmark reports
perop() {
	local a b f=cpu
	if [[ "${6:-}" == loop ]]; then f=loopcpu; fi
	a="$($f "$2" "$3" "$4")"
	b="$($f "$2" "$3" "$5")"
	awk -v a="$a" -v b="$b" -v n1="$4" -v n2="$5" 'BEGIN { printf "%.3f", (b - a) / (n2 - n1) * 1e6 }'
}

# instructions per op from callgrind at two counts: instr BIN BENCH N1 N2
# [MODE]. For MODE "loop" only the measured loop is counted: the benchmark
# calls loopStarts right before it and loopEnds right after, and callgrind
# dumps its counts at both (each dump starts the next count from zero;
# --zero-before zeroes the calling thread's counts only, and the set-up ran
# on others).
instr() {
	local b="$1" bench="$2" n1="$3" n2="$4" mode="${5:-}" d n part
	local -a counts=() opts=()
	if [[ "$mode" == loop ]]; then
		opts=(--dump-before='*_test.loopStarts' --dump-before='*_test.loopEnds')
	fi
	d="$(mktemp -d)"
	for n in "$n1" "$n2"; do
		GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --callgrind-out-file="$d/cg" "${opts[@]}" \
			"$bin/$b.test" -test.run '^$' -test.bench "$bench" -test.benchtime "${n}x" >/dev/null 2>"$d/log"
		part="$d/cg"
		if [[ "$mode" == loop ]]; then
			# the dump at loopEnds (b.Loop runs the loop once)
			part="$(grep -l '^desc: Trigger: --dump-before=.*loopEnds$' "$d"/cg.* 2>/dev/null | sort -V | tail -1)"
			if [[ -z "$part" ]]; then
				echo "benchratios: callgrind saw no loopEnds in $bench" >&2
				exit 1
			fi
		fi
		counts+=("$(awk '/^summary:/ {print $2}' "$part")")
		rm -f "$d"/cg*
	done
	rm -rf "$d"
	awk -v a="${counts[0]}" -v b="${counts[1]}" -v n1="$n1" -v n2="$n2" 'BEGIN { printf "%.0f", (b - a) / (n2 - n1) }'
}

declare -A vals
for r in $(seq "$rounds"); do
	echo "round $r of $rounds" >&2
	for spec in "${benches[@]}"; do
		read -r name b bench n1 n2 mode <<<"$spec"
		vals[$name]+="$(perop "$name" "$b" "$bench" "$n1" "$n2" "$mode") "
	done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# ratios NUM DEN [SUB [DSUB]]: per-round (NUM - SUB) / (DEN - DSUB)
ratios() {
	local -a n d s ds
	read -ra n <<<"${vals[$1]}"
	read -ra d <<<"${vals[$2]}"
	if [[ -n "${3:-}" ]]; then read -ra s <<<"${vals[$3]}"; fi
	if [[ -n "${4:-}" ]]; then read -ra ds <<<"${vals[$4]}"; fi
	for i in "${!n[@]}"; do
		awk -v n="${n[$i]}" -v d="${d[$i]}" -v s="${s[$i]:-0}" -v ds="${ds[$i]:-0}" 'BEGIN { printf "%.3f ", (n - s) / (d - ds) }'
	done
}

echo "CPU time per op (µs), medians of $rounds interleaved rounds:"
for spec in "${benches[@]}"; do
	read -r name _ <<<"$spec"
	printf "  %-14s %s\n" "$name" "$(median <<<"${vals[$name]}")"
done
# medrange: the median of the values on stdin and, in brackets, their
# smallest and largest: how far one round strays from another
medrange() {
	local v
	v="$(cat)"
	printf "%s [%s]" "$(median <<<"$v")" "$(tr ' ' '\n' <<<"$v" | grep -v '^$' | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%s..%s", lo, hi}')"
}
echo "ratios (median of the per-round ratios [smallest..largest]):"
printf "  %-60s %-22s (target <= 2.5)\n" "BenchmarkRun / BenchmarkFloor" "$(ratios run floor | medrange)"
printf "  %-60s %-22s (bound <= 1.5)\n" "(TracedRun - UntracedRun) / OTelFloor" "$(ratios traced otelfloor untraced | medrange)"
printf "  %-60s %s\n" "  own work: that minus 1" "$(ratios traced otelfloor untraced | median | awk '{printf "%.3f", $1 - 1}')"
printf "  %-60s %s\n" "  without LangSmith's mirrors (NoMirror)" "$(ratios traced-nm otelfloor-nm untraced | median)"
printf "  %-60s %-22s (target <= 0.9)\n" "(TracedRunNoMirror - Untraced) / (HandOTelRun - Untraced)" "$(ratios traced-nm handotel untraced untraced | medrange)"
printf "  %-60s %-22s (target <= 1.3)\n" "FullStack spills-0 / traced-only" "$(ratios fs-spills0 fs-traced | medrange)"
printf "  %-60s %-22s (target <= 1.3)\n" "FullStack spills-2000 / traced-only" "$(ratios fs-spills2000 fs-traced | medrange)"
printf "  %-60s %-22s (flat: near 1)\n" "FullStack spills-2000 / spills-0" "$(ratios fs-spills2000 fs-spills0 | medrange)"

if [[ "$instructions" == 1 ]]; then
	echo "instructions per op (callgrind, two counts):"
	declare -A ins
	for spec in "${benches[@]}"; do
		read -r name b bench n1 n2 mode <<<"$spec"
		# callgrind runs about 50 times slower: fewer iterations.
		ins[$name]="$(instr "$b" "$bench" "$((n1 / 10))" "$((n2 / 10))" "${mode:-}")"
		printf "  %-14s %s\n" "$name" "${ins[$name]}"
	done
	echo "  (FullStack: the measured loop alone; user space only, not the journal's writes and file creations;"
	echo "   they move by up to ~12% from one process to the next, with the GC's timing: see docs/benchmarking.md)"
	awk -v r="${ins[run]}" -v f="${ins[floor]}" -v t="${ins[traced]}" -v u="${ins[untraced]}" -v o="${ins[otelfloor]}" \
		-v s0="${ins[fs-spills0]}" -v s2="${ins[fs-spills2000]}" -v ft="${ins[fs-traced]}" \
		-v tn="${ins[traced-nm]}" -v h="${ins[handotel]}" 'BEGIN {
		printf "  Run / Floor %.3f; (Traced - Untraced) / OTelFloor %.3f; (TracedNoMirror - Untraced) / (HandOTel - Untraced) %.3f; FullStack spills-0 / traced %.3f, spills-2000 / traced %.3f\n",
			r / f, (t - u) / o, (tn - u) / (h - u), s0 / ft, s2 / ft }'
fi
