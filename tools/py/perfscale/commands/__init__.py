"""The commands of tools/perfscale, one module each with main(argv) -> int."""
