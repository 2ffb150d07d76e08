"""What labels say about a run's premises once they land: label-free estimates against the truth, and a
reference that looks in-sample."""
