"""Benchmarks of memchentic (not shipped with the package); see bench/README.md."""
