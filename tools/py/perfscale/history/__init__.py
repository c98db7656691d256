"""The history of nightly runs: the store (SQLite) that nightly, calibrate, trials and the
pages read and write."""
