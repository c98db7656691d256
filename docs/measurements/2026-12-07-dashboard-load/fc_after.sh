#!/bin/bash
# fc_after.sh HISTORY ROUNDS: first compares of main, fresh process (empty cache) then a
# new pair warm, then a fresh process reading floors another process kept.
h=$1; n=$2
cd /tmp/dash
P=/work/main/tools/py/python
for r in $(seq 1 $n); do
  rm -rf fc-cache; mkdir fc-cache
  echo "round $r after fresh(empty cache)+warm: $($P firstcompare.py /work/main $h fc-cache 3 4)" | tee -a fc-quiet.txt
  echo "round $r after fresh(floors kept by another process): $($P firstcompare.py /work/main $h fc-cache 5)" | tee -a fc-quiet.txt
done
rm -rf fc-cache
