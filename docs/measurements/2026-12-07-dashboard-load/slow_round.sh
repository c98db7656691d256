#!/bin/bash
# slow_round.sh HISTORY6 HISTORY7: 32 clients trickling a declared body (and 32 trickling
# header lines) against each server, 5 page requests meanwhile (slow.py), before then after.
cd /tmp/dash
for mode in body headers; do
for side in before after; do
  if [ $side = before ]; then dir=/tmp/dash/before; h=$1; else dir=/work/wt/dashboard; h=$2; fi
  : > serve-18303.log
  $dir/tools/py/python -m perfscale.cli serve --history $h --listen 127.0.0.1:18303 > serve-18303.log 2>&1 &
  pid=$!
  for i in $(seq 1 240); do grep -q "http://" serve-18303.log && break; sleep 0.5; done
  echo "$mode $side: $(timeout 200 /work/wt/dashboard/tools/py/python slow.py 18303 32 $mode 2>&1 | tr '\n' ';') load $(cut -d' ' -f1 /proc/loadavg)" | tee -a slow.txt
  kill $pid; wait $pid 2>/dev/null
done
done
