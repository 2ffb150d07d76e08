"""`driftline site`: a static, self-contained overview of every monitor in the history store (an index
with sparklines, one page per monitor with its heat map, drift share and estimated performance)."""

from driftline.tasks.site.build import SiteWritten, write_site

__all__ = ["SiteWritten", "write_site"]
