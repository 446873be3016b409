#!/usr/bin/env bash
# Hexforge (`hexforge bench generate`, ONNX Runtime CPU) against llama.cpp (`llama-bench`) on the same synthetic
# Qwen2.5-0.5B weights, alternating, REPS repetitions of every cell, the C triad before and after.
# The setup (llama.cpp build, GGUF files, C triad) is ../shared/tools/peers/README.md; this copy of its
# side_by_side.sh reads today's `bench generate` output (min / median / max) and runs one timed repetition per
# alternation (after bench generate's own two warm-ups).
#   usage: tools/peers/side_by_side.sh [REPS] [OUTDIR]      (from the project checkout)
set -uo pipefail
REPS=${1:-3}
PEERS=${PEERS:-/tmp/peers}
TOOLS=${PEERS_TOOLS:-../shared/tools/peers}
OUT=${2:-$PEERS/run-$(date +%H%M%S)}
mkdir -p "$OUT"
HX=${HEXFORGE:-bin/hexforge}
LB=${LLAMA_BENCH:-$PEERS/llama.cpp/build/bin/llama-bench}   # another build, e.g. one without AMX (see docs/benchmarks.md)
TRIAD=$PEERS/triad
S=${PEERS_SHM:-/dev/shm/peers}
declare -A HXM=( [float]=$S/hx-f32 [int8]=$S/hx-i8nb/onnx-model [int4]=$S/hx-i4nb/onnx-model )
declare -A GG=( [float]=$S/gguf/synth05-f16.gguf [int8]=$S/gguf/synth05-q8_0.gguf [int4]=$S/gguf/synth05-q4_0.gguf )
FMTS=${FMTS:-"float int8 int4"}
THREADS=${THREADS:-"1 2"}
MEASURES=${MEASURES:-"decode prefill"}
CSV=$OUT/raw.csv
# the CPU exports must be the dynamic variant: `quantize` and `export` default to the static NPU graphs, which
# ../shared/tools/peers/prepare.sh does not override (see docs/benchmarks.md, 2026-12-05, for the commands)
for f in $FMTS; do
  if ! grep -q '"variant" : "DYNAMIC"' "${HXM[$f]}/export.json" 2>/dev/null; then
    echo "side_by_side: ${HXM[$f]} is not a dynamic export; make it with --variant dynamic" >&2; exit 2
  fi
done
[[ -x $TRIAD ]] || cc -O3 -march=native -ffast-math -fopenmp "$TOOLS/triad.c" -o "$TRIAD"
echo "time,rep,side,format,threads,measure,value,triad_GBs,load1,load5,load15,file" > "$CSV"

load() { awk '{print $1","$2","$3}' /proc/loadavg; }

hx() { # fmt threads measure rep
  local m=${HXM[$1]} t=$2 meas=$3 rep=$4 pl
  if [[ $meas == decode ]]; then pl=8; else pl=128; fi
  local L; L=$(load)
  local log=$OUT/hx-$1-t$t-$meas-r$rep.log
  "$HX" bench generate --model "$m" --threads "$t" --prompt-len $pl --new 32 --reps 1 > "$log" 2>&1
  local bw dec pre
  bw=$(sed -n 's/^memory bandwidth (triad.*): \([0-9.]*\) GB\/s/\1/p' "$log")
  pre=$(sed -n 's/^prefill [0-9]* tokens: min [0-9.]* \/ median \([0-9.]*\) .*/\1/p' "$log")
  dec=$(sed -n 's/^decode [0-9]* tokens: min [0-9.]* \/ median \([0-9.]*\) .*/\1/p' "$log")
  if [[ $meas == decode ]]; then
    echo "$(date +%T),$rep,hexforge,$1,$t,decode,${dec:-ERR},$bw,$L,$m" >> "$CSV"
  else
    echo "$(date +%T),$rep,hexforge,$1,$t,prefill,${pre:-ERR},$bw,$L,$m" >> "$CSV"
    echo "$(date +%T),$rep,hexforge,$1,$t,decode_after128,${dec:-ERR},$bw,$L,$m" >> "$CSV"
  fi
  tail -n 3 "$log" | sed "s/^/  [hx $1 t$t $meas r$rep] /"
}

ll() { # fmt threads measure rep
  local g=${GG[$1]} t=$2 meas=$3 rep=$4 args
  if [[ $meas == decode ]]; then args="-p 0 -n 32"; else args="-p 128 -n 0"; fi
  local L; L=$(load)
  local log=$OUT/ll-$1-t$t-$meas-r$rep.jsonl
  "$LB" -m "$g" -t "$t" $args -r 1 -o jsonl > "$log" 2> "$log.err"
  local v; v=$(python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())['avg_ts'])" "$log" 2>/dev/null)
  echo "$(date +%T),$rep,llama.cpp,$1,$t,$meas,${v:-ERR},,$L,$g" >> "$CSV"
  echo "  [ll $1 t$t $meas r$rep] ${v:-ERR} tok/s"
}

{
echo "== side_by_side start $(date -Is); uptime: $(uptime)"
for t in 1 2; do echo "triad-c: $($TRIAD $t 64)  load $(load)"; done
for rep in $(seq 1 "$REPS"); do
  for meas in $MEASURES; do
    for t in $THREADS; do
      for f in $FMTS; do
        hx "$f" "$t" "$meas" "$rep"
        ll "$f" "$t" "$meas" "$rep"
      done
    done
  done
done
for t in 1 2; do echo "triad-c: $($TRIAD $t 64)  load $(load)"; done
echo "== side_by_side end $(date -Is); uptime: $(uptime)"
} 2>&1 | tee "$OUT/console.log"
python3 "$TOOLS/summarize.py" "$CSV" | tee "$OUT/summary.txt"
