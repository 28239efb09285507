"""Read path: candidates, pure signal and fusion functions, profiles, the pipeline."""
