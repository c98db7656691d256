"""The history of nightly runs (SQLite) and `tools/perfscale nightly`, which fills it."""
