"""The machine a run ran on: its identity, read from /proc and /sys (identity). Below the
history, which keys lineages by it, and the runner and the guests, which record it: none
of them has to import another's layer to learn what a machine is."""
