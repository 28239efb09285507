"""Graph: entities named by memories, and (later) following edges."""
