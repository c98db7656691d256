"""Kernel test labs' own machinery: a run as a KCIDB report (kcidb), a LAVA job that runs
perfscale and its results read back (lava). docs/labs.md."""
