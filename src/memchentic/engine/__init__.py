"""The engine: one core and the services built on it (see :mod:`.core`)."""
