"""perfscale's Python tools: what people run around the benchmarks (tools/perfscale).

  cli        `tools/perfscale <command>`: which module runs which command
  results/   reading and writing Google Benchmark result files
  gate/      judging a run against a baseline: compare, statistics, noise floors,
             confirmation reruns, calibration, the injected slowdown
  history/   the history of nightly runs (store: one interface; SQLite or PostgreSQL
             engines; schema, spool, identity, import) and the nightly itself
  parity/    our figures held against `perf bench`, per family
  plots/     pictures and pages: scaling curves, reports
  vm/        runs in a kernel booted in QEMU, what such runs may be compared on, bisection
  testlogs   the test-case count of `tools/perfscale test`
"""
