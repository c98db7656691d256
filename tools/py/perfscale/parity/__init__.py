"""`tools/perfscale parity FAMILY`'s machinery: run perf bench and the family binary, and
hold one against the other."""
