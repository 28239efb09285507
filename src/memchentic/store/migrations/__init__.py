"""Schema migrations, one ordered module per backend."""
