"""Short human-readable text shared by the CLI and the dashboard."""

from __future__ import annotations


def age_text(seconds: float | None) -> str:
    """`42s`, `17m`, `5h`, `3d`; `-` when unknown."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{int(seconds)}s"
    minutes = int(seconds // 60)
    if minutes < 120:
        return f"{minutes}m"
    hours = minutes // 60
    return f"{hours}h" if hours < 48 else f"{hours // 24}d"


def size_text(count: int | None) -> str:
    """`512 B`, `1.5 KiB`, `3.2 MiB`; `-` when unknown."""
    if count is None:
        return "-"
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"
