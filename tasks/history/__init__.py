"""The history store: runs, per-metric results, incidents and the alert outbox (SQLAlchemy 2)."""
