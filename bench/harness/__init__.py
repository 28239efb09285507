"""The retrieval benchmark harness: LoCoMo and LongMemEval, their baselines, the
embedding cache and the ingest modes they share.

Benchmark code, not library code: nothing under ``src/memchentic`` imports it.
"""
