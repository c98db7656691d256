"""`tools/perfscale parity FAMILY`'s machinery: run perf bench and the family, hold one against the other."""
