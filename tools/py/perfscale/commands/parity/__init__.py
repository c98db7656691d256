"""`tools/perfscale parity FAMILY`: one module per family."""
