"""Paper Search (PaperScout-style literature search) as a Gymnasium env."""
