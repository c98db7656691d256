#!/bin/bash
# fc_round.sh TAG BEFORE_HISTORY AFTER_HISTORY ROUNDS: first compares, interleaved.
tag=$1; bh=$2; ah=$3; n=$4
cd /tmp/dash
export PGPASSFILE=/tmp/dash/pgp/cluster/pgpass
P=/work/wt/dashboard/tools/py/python
for r in $(seq 1 $n); do
  rm -rf fc-cache; mkdir fc-cache
  echo "$tag round $r before fresh+warm: $($P firstcompare.py /tmp/dash/before $bh 3 4)" | tee -a fc.txt
  echo "$tag round $r after fresh(empty cache)+warm: $($P firstcompare.py /work/wt/dashboard $ah fc-cache 3 4)" | tee -a fc.txt
  echo "$tag round $r after fresh(floors kept by another process): $($P firstcompare.py /work/wt/dashboard $ah fc-cache 5)" | tee -a fc.txt
done
rm -rf fc-cache
