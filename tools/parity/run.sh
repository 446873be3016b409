#!/usr/bin/env bash
# Hexforge against independent references (transformers, peft, the RTN rule as written in ../shared/docs/algorithms.md)
# on the bundled tiny model and on synthetic checkpoints of real sizes. Needs python3 with numpy, torch, transformers,
# peft and onnxruntime (a machine that has them: CI does not, and does not run this), and bin/hexforge.
#   tools/parity/run.sh WORK CASE...    CASE: tiny | PRESET[:untied][:llama]   e.g. tiny qwen2.5-1.5b qwen2.5-0.5b:untied:llama
#   (the Llama 3 and Qwen3 presets carry their family: tiny-llama3 tiny-qwen3 llama-3.2-1b qwen3-0.6b; transformers
#   >= 4.51 has Qwen3)
# Prints one `PARITY <check> <PASS|FAIL> {...}` line per check; exits 1 if any failed.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HF="$HERE/../../bin/hexforge"
PY="python3 $HERE/parity.py"
WORK="${1:?usage: run.sh WORK CASE...}"; shift
mkdir -p "$WORK"
failed=0
step() { # name, command...: run it (its output kept in WORK), print its PARITY lines, time it, note a failure, go on
  local name="$1"; shift
  local t0=$SECONDS log="$WORK/$name.log"
  if "$@" > "$log" 2>&1; then
    grep -h '^PARITY' "$log"; echo "STEP $name ok $((SECONDS - t0)) s"
  else
    grep -h '^PARITY' "$log"; tail -n 15 "$log"; echo "STEP $name FAILED $((SECONDS - t0)) s"; failed=1; return 1
  fi
}
for case in "$@"; do
  echo "=== $case"
  dir="$WORK/${case//:/-}"
  rm -rf "$dir" && mkdir -p "$dir"
  if [[ "$case" == tiny ]]; then
    model="$HERE/../../fixtures/qwen2-tiny"
  else
    IFS=: read -r preset flag1 flag2 <<< "$case"
    opts=()
    for f in ${flag1:-} ${flag2:-}; do
      case "$f" in untied) opts+=(--untied) ;; llama) opts+=(--arch llama) ;; *) echo "unknown flag $f"; exit 2 ;; esac
    done
    model="$dir/model"
    step synth "$HF" synth --preset "$preset" --seed 1 "${opts[@]}" --out "$model" || continue
  fi
  step export-float "$HF" export --model "$model" --variant dynamic --out "$dir/float" \
    && step logits-float $PY logits --name "logits-float:$case" --reference-model "$model" --export "$dir/float"
  for bits in 4 8; do
    q="$dir/rtn$bits"
    step quantize-int$bits "$HF" quantize --model "$model" --method rtn --bits $bits --format matmulnbits \
        --eval-tokens 128 --max-delta-ppl 1e9 --out "$q" || continue
    step rtn-int$bits $PY rtn --source "$model" --checkpoint "$q/checkpoint"
    # the gate is not what is checked here (random weights score a perplexity of ~1e5, where a rise of 0.5 means
    # nothing: INT8 was refused so on the device); accuracy level 0: MatMulNBits computes in float32 on the dequantized weights, what transformers runs on the
    # checkpoint's float copy of them
    step export-int$bits "$HF" export --model "$q/checkpoint" --variant dynamic --format matmulnbits --accuracy-level 0 \
        --out "$dir/rtn$bits-onnx" \
      && step logits-int$bits $PY logits --name "logits-int$bits:$case" --reference-model "$q/checkpoint" \
        --export "$dir/rtn$bits-onnx"
    rm -rf "$dir/rtn$bits-onnx" "$q/onnx-model"
  done
  rm -rf "$dir/float"
  step adapter $PY adapter --model "$model" --out "$dir/adapter" \
    && step merge "$HF" merge --model "$model" --adapter "$dir/adapter" --out "$dir/merged" \
    && step merge-check $PY merge --model "$model" --adapter "$dir/adapter" --merged "$dir/merged"
  rm -rf "$dir"
done
exit $failed
