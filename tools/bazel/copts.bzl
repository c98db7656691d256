"""Compiler options shared by every perfscale target."""

# Our code is warning-free; -Werror keeps it that way. Only applied to our targets,
# never to Debian's headers (they arrive as system includes).
PERFSCALE_COPTS = [
    "-Wall",
    "-Wextra",
    "-Wshadow",
    "-Werror",
]
