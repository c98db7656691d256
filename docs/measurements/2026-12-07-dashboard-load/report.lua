done = function(summary, latency, requests)
  io.write(string.format("RESULT requests %d rps %.1f p50 %.0f p95 %.0f p99 %.0f errors %d\n",
    summary.requests, summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(95) / 1000, latency:percentile(99) / 1000,
    summary.errors.status + summary.errors.timeout + summary.errors.connect + summary.errors.read + summary.errors.write))
end
