"""The one SVG writer the report, the site and the attribution plots draw with: the `<svg>` element
(inline, or a standalone document), text escaped for it, and round axis ticks. No plotting library."""

from __future__ import annotations

import math
from collections.abc import Iterable
from html import escape

SVG_NAMESPACE = "http://www.w3.org/2000/svg"
XML_DECLARATION = '<?xml version="1.0" encoding="utf-8"?>\n'
# Tick steps: 1, 2 or 5 times a power of ten within a range; 2.5 as well for gridlines covering one.
INNER_STEPS = (1.0, 2.0, 5.0, 10.0)
COVER_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)


def escaped(text: object) -> str:
    """Text or an attribute value, escaped for SVG (XML) and HTML."""
    return escape(str(text), quote=True)


def svg(
    width: float,
    height: float,
    body: Iterable[str],
    *,
    css_class: str | None = None,
    namespace: bool = True,
    document: bool = False,
    background: str | None = None,
    **attributes: str,
) -> str:
    """An `<svg>` element of a fixed size (`viewBox` the same), its attributes in the order given
    (`aria_label` written `aria-label`; values must already be escaped), an optional background
    rectangle, then `body`; with `document`, a standalone file (XML declaration first)."""
    head = f' xmlns="{SVG_NAMESPACE}"' if namespace else ""
    head += f' class="{css_class}"' if css_class is not None else ""
    head += f' width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}"'
    head += "".join(f' {name.replace("_", "-")}="{value}"' for name, value in attributes.items())
    fill = f'<rect width="{width:.0f}" height="{height:.0f}" fill="{background}"/>' if background else ""
    element = f"<svg{head}>{fill}{''.join(body)}</svg>"
    return XML_DECLARATION + element if document else element


def nice_ticks(low: float, high: float, count: int = 5, *, cover: bool = False) -> list[float]:
    """About `count` round values (an axis reads 0.76, 0.78 … rather than 0.7796, 0.7950 …): ticks
    within [low, high] in steps of 1, 2 or 5 times a power of ten ([low] for an empty span, none for a
    non-finite one); with `cover`, about `count` gridlines covering [low, high] from below `low` to
    above `high`, in steps of 1, 2, 2.5 or 5 times a power of ten, an empty span widened to one unit."""
    if cover:
        high = high if high > low else low + 1.0
    elif not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low] if math.isfinite(low) else []
    raw = (high - low) / (count - 1 if cover else count)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (COVER_STEPS if cover else INNER_STEPS) if m * power >= raw * (1 - 1e-9))
    if cover:
        first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    else:
        first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
    return [round(i * step, 12) for i in range(first, last + 1)]
