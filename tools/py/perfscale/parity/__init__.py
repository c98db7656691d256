"""`tools/perfscale parity FAMILY`: a family's figures held against `perf bench`."""
