"""Retraining a failing model: when a run starts it, and the command or webhook that does it."""
