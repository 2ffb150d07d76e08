"""The text demo: VADER rated sentences and the sentiment model built from them (see SOURCE.md)."""
