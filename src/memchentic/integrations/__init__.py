"""Adapters that let other agent frameworks keep their memory in memchentic.

Each module imports its framework, which is an optional extra:

* :mod:`memchentic.integrations.langgraph`: :class:`MemchenticStore`, a LangGraph
  ``BaseStore`` (also what LangMem's memory tools write to);
  ``pip install 'memchentic[langgraph]'``.

They use only the public :class:`~memchentic.Memory` API, so the access rules of
the memory they are given hold for everything they do.
"""
