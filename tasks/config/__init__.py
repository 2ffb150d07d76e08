"""The monitor spec and the names it claims."""
