#!/usr/bin/env bash
# Interleaved: before (BEFORE checkout) and after (AFTER checkout), with and without counts.
# usage: measure.sh BEFORE AFTER ROUNDS OUTCSV
set -u
before=$1 after=$2 rounds=$3 out=$4
echo "round,side,counts,seconds,rows" > "$out"
for r in $(seq 1 "$rounds"); do
  for side in before after; do
    dir=$before; [[ $side == after ]] && dir=$after
    for counts in on off; do
      extra=(); [[ $counts == off ]] && extra=(-- --attribution=false)
      start=$(date +%s.%N)
      (cd "$dir" && tools/perfscale run --quick --out /tmp/quick-$side-$counts-$r.json "${extra[@]}" >/tmp/quick-$side-$counts-$r.log 2>&1)
      end=$(date +%s.%N)
      rows=$(python3 -c "import json;print(len(json.load(open('/tmp/quick-$side-$counts-$r.json'))['benchmarks']))" 2>/dev/null || echo ERR)
      echo "$r,$side,$counts,$(echo "$end - $start" | bc),$rows" | tee -a "$out"
    done
  done
done
