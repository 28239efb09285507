"""Write path: secrets, polarity and the resolution of each write (docs/design.md, section 4)."""
