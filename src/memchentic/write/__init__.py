"""Write path: secrets, polarity and the resolution of each write (DESIGN section 4)."""
