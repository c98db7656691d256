"""perfscale's Python tools: what people run around the benchmarks (tools/perfscale)."""
