"""The suite runner: building and running the benchmarks, lineages, the injector."""
