#!/bin/bash
# run_after.sh TAG HISTORY SECONDS: each page by wrk against main's server alone (started
# for that page, stopped by PID); results appended to results-quiet.txt.
set -u
tag=$1; h=$2; secs=$3
cd /tmp/dash
P=/work/main/tools/py/python
$P urls.py "$h" /work/main/tools/py > urls-$tag.txt
while IFS=$'\t' read -r label path; do
  : > serve.log
  $P -m perfscale.cli serve --history "$h" --listen 127.0.0.1:18302 > serve.log 2>&1 &
  pid=$!
  for i in $(seq 1 240); do grep -q "http://" serve.log && break; sleep 0.5; done
  line=$(wrk -t 2 -c 32 -d ${secs}s --timeout 30s -s report.lua "http://127.0.0.1:18302$path" | grep RESULT)
  echo "$tag $label after $line load $(cut -d' ' -f1 /proc/loadavg)" | tee -a results-quiet.txt
  kill $pid; wait $pid 2>/dev/null
done < urls-$tag.txt
