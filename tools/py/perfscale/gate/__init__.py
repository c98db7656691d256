"""The regression gate: comparing two runs, its statistics, noise floors, confirmation."""
