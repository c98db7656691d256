"""Reading and writing Google Benchmark result files: samples, names, headline figures."""
