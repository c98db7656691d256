#!/bin/bash
# run_load.sh TAG BEFORE_HISTORY AFTER_HISTORY SECONDS: each page by wrk, before then after,
# page by page, each against a server started for it (no backlog of the last page's work
# carried over); results appended to results.txt. Stops its servers by PID.
set -u
tag=$1; bh=$2; ah=$3; secs=$4; only=${5:-.}
cd /tmp/dash
export PGPASSFILE=/tmp/dash/pgp/cluster/pgpass
start() {  # start DIR HISTORY PORT -> pid in $pid
  : > serve-$3.log
  "$1/tools/py/python" -m perfscale.cli serve --history "$2" --listen 127.0.0.1:$3 > serve-$3.log 2>&1 &
  pid=$!
  for i in $(seq 1 240); do grep -q "http://" serve-$3.log && return; sleep 0.5; done
  echo "server on $3 did not start"; cat serve-$3.log
}
stop() { kill $1; wait $1 2>/dev/null; }
/work/wt/dashboard/tools/py/python urls.py "$ah" /work/wt/dashboard/tools/py > urls-$tag.txt
while IFS=$'\t' read -r label path; do
  [[ $label =~ $only ]] || continue
  for side in before after; do
    if [ $side = before ]; then start /tmp/dash/before "$bh" 18301; port=18301
    else start /work/wt/dashboard "$ah" 18302; port=18302; fi
    line=$(wrk -t 2 -c 32 -d ${secs}s --timeout 30s -s report.lua "http://127.0.0.1:$port$path" | grep RESULT)
    echo "$tag $label $side $line load $(cut -d' ' -f1 /proc/loadavg)" | tee -a results.txt
    stop $pid
  done
done < urls-$tag.txt
