#!/bin/bash
# The launcher's heap against hand-set ones, alternating: round 0 warms up, then each round runs the LoRA bench once
# under A (bin/hexforge's defaults), B ($BOPTS, default a fixed 256 MB young generation) and C (SMALLHEAP), in turn.
#   tools/bench/heap-ab.sh MODEL "SMALLHEAP OPTIONS" [ROUNDS]     e.g. tools/bench/heap-ab.sh /dev/shm/q05 "-Xmx600m -XX:MaxNewSize=200m" 4
MODEL=$1; SMALL=$2; ROUNDS=${3:-4}; TAG=$(basename $MODEL)
for r in $(seq 0 $ROUNDS); do
  for v in A B C; do
    case $v in
      A) OPTS="" ;;
      B) OPTS="${BOPTS:--XX:-UseAdaptiveSizePolicy -Xmn256m}" ;;
      C) OPTS="$SMALL" ;;
    esac
    HEXFORGE_JAVA_OPTS="$OPTS" /usr/bin/time -f "%e s wall, %M KB maxrss, %R minor faults" "$(dirname "$0")/../../bin/hexforge" bench finetune \
      --model $MODEL --batch 1 --seq 128 --steps 3 --threads 2 > ${TMPDIR:-/tmp}/heap-ab-$TAG-$r-$v.log 2>&1
    echo "round $r $v [$OPTS]: $(grep -h 'threads 2' ${TMPDIR:-/tmp}/heap-ab-$TAG-$r-$v.log) | $(tail -1 ${TMPDIR:-/tmp}/heap-ab-$TAG-$r-$v.log)"
  done
done
