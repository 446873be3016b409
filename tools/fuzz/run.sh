#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser of outside bytes (Jazzer), one target after another, each for the duration
# its @FuzzTest declares (Fuzzing.DURATION). A finding is written as a file into the target's inputs folder
# (src/test/resources/<package>/<Class>Inputs/<method>/), where every `./mvnw verify` replays it in seconds; fix the
# parser, keep the file. Prints one line per target: executions, seconds, code edges covered, findings.
#   tools/fuzz/run.sh              every target
#   tools/fuzz/run.sh Class#method  one (e.g. SafetensorsFuzzTest#file)
set -uo pipefail
cd "$(dirname "$0")/../.."
TARGETS=(
  "libs/core SafetensorsFuzzTest#file"
  "libs/core CheckpointFuzzTest#config"
  "libs/core CheckpointFuzzTest#shardIndex"
  "libs/core TokenizerFuzzTest#tokenizerJson"
  "libs/core ModelArchiveFuzzTest#archive"
  "shared-contracts JobSpecFuzzTest#json"
  "shared-contracts JobSpecFuzzTest#yaml"
  "shared-contracts JobSpecFuzzTest#deviceMessage"
  "libs/lora LoraFuzzTest#adapterConfig"
  "libs/lora LoraFuzzTest#adapterWeights"
  "libs/lora LoraFuzzTest#trainingData"
  "libs/onnx ActivationEncodingsFuzzTest#file"
  "libs/onnx OnnxAdapterFileFuzzTest#file"
)
# the parsers and the libraries they parse with are instrumented, so the fuzzer sees their branches
INSTRUMENT='dev.hexforge.**,com.fasterxml.jackson.**,org.yaml.snakeyaml.**,org.apache.commons.compress.**'
./mvnw -B -q -o install -DskipTests >/dev/null || { echo "build failed" >&2; exit 1; }
printf '%-44s %12s %8s %6s %s\n' target executions seconds edges findings
for t in "${TARGETS[@]}"; do
  module=${t%% *}; test=${t#* }
  [[ $# -gt 0 && "$1" != "$test" ]] && continue
  log=$(mktemp)
  before=$(git status --porcelain --untracked-files=all -- "$module/src/test/resources" | wc -l)
  JAZZER_FUZZ=1 ./mvnw -B -o test -pl "$module" -Dtest="$test" -Dsurefire.failIfNoSpecifiedTests=false \
      "-Djazzer.instrument=$INSTRUMENT" >"$log" 2>&1
  rc=$?
  done_line=$(grep -aE '^Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1)
  runs=$(sed -E 's/^Done ([0-9]+) runs in ([0-9]+).*/\1/' <<<"$done_line")
  secs=$(sed -E 's/^Done ([0-9]+) runs in ([0-9]+).*/\2/' <<<"$done_line")
  edges=$(grep -aoE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  after=$(git status --porcelain --untracked-files=all -- "$module/src/test/resources" | wc -l)
  findings=$(( after - before ))
  [[ $rc -ne 0 && $findings -eq 0 ]] && findings="failed (see $log)"
  printf '%-44s %12s %8s %6s %s\n' "$test" "${runs:--}" "${secs:--}" "${edges:--}" "$findings"
  [[ $rc -eq 0 ]] && rm -f "$log"
done
