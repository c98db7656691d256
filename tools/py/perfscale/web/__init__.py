"""The dashboard over the nightly history (`tools/perfscale serve`)."""
