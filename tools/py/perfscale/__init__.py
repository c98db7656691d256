"""perfscale's Python tools: what people run around the benchmarks (tools/perfscale).

Commands on top of a library in layers, imports one way down (docs/python-tools.md;
testing/py/test_layers.py holds the order):

  cli        `tools/perfscale <command>`: which module runs which command
  commands/  one module per command, each with main(argv) -> int
  options    the options several commands share (argparse stays in this layer)
  suite/ vm/ parity/   running things: the suite runner, the nightly, the injector,
             guests in QEMU, perf bench
  plots/     pictures and pages: scaling curves, reports
  gate/      judging a run against a baseline: statistics, comparability, noise floors,
             confirmation reruns
  history/   the history of nightly runs: one store interface over SQLite or PostgreSQL
             engines, its schema, spool, import
  results/   reading and writing Google Benchmark result files
  machine/   what machine a run ran on: its identity, read from /proc and /sys
"""
