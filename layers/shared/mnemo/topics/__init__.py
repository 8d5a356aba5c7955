"""Topic memory (seed 002): one index document per project, topic notes, a general section."""
