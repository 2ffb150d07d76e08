"""Real data shipped with driftline: the demo's ACS census extract and UCI Adult (see each SOURCE.md)."""
