"""Example DAGs: the census demo monitor run per data interval, and the retraining DAG it triggers."""
