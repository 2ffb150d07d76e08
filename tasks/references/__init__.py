"""The reference side of a run: the snapshot, the model that scores it and every batch, the profiles fitted
once per snapshot, the model's feature importance, and the profiles exported as expectations."""
