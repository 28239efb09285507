"""The engine: its parts, the gate to the store, and the services built on them
(see :mod:`memchentic.memory`)."""
