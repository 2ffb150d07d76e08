"""Exceptions a check raises on purpose; the runner turns them into `error`/`skipped` results."""


class CheckInputError(ValueError):
    """The data or parameters cannot be used: the message names the column, key or value."""


class NotApplicable(Exception):
    """The check does not apply to this data (no labels, no categorical features, ...)."""
