"""The history of nightly runs: the store (SQLite) that the nightly, calibrate and the pages read and write."""
