#!/bin/bash
# An export killed with SIGKILL at shares of a whole run's time, then the same command again into the same folder:
# prints what each kill left and whether the folder ends byte for byte as the whole run's.
# usage: tools/bench/kill-export.sh MODEL_DIR WORK_DIR [export flags...]   (default flags: --variant static)
set -u
MODEL=$1; WORK=$2; shift 2
FLAGS=("$@"); [ ${#FLAGS[@]} -eq 0 ] && FLAGS=(--variant static)
HF="$(cd "$(dirname "$0")/../.." && pwd)/bin/hexforge"
rm -rf "$WORK"; mkdir -p "$WORK"
digest() { (cd "$1" && find . -type f | sort | xargs sha256sum); }
s=$(date +%s.%N); "$HF" export --model "$MODEL" "${FLAGS[@]}" --out "$WORK/whole" > /dev/null 2>&1 || exit 1; e=$(date +%s.%N)
T=$(echo "$e - $s" | bc); echo "whole run: $T s"
digest "$WORK/whole" > "$WORK/whole.sha"
for share in 0.3 0.6 0.9; do
  out="$WORK/killed-$share"
  "$HF" export --model "$MODEL" "${FLAGS[@]}" --out "$out" > /dev/null 2>&1 &
  sleep "$(echo "$T * $share" | bc)"
  pkill -9 -f -- "--out $out" ; wait 2>/dev/null
  left=$(du -sm "$out" 2>/dev/null | cut -f1)
  groups=$(cat "$out"/.export/*.weights 2>/dev/null | grep -c '^c')
  if [ ! -d "$out/.export" ] && [ -d "$out" ]; then echo "killed at $share: the export had finished"; continue; fi
  s=$(date +%s.%N); "$HF" export --model "$MODEL" "${FLAGS[@]}" --out "$out" > /dev/null 2>&1; rc=$?; e=$(date +%s.%N)
  digest "$out" > "$out.sha"
  same=$(cmp -s "$WORK/whole.sha" "$out.sha" && echo identical || echo DIFFERENT)
  echo "killed at $share: ${left:-0} MB and $groups finished groups left; again: exit $rc, $(echo "$e - $s" | bc) s, files $same"
done
