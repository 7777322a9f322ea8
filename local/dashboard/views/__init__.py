"""The dashboard's pages: each `render()` loads through `local.dashboard.source`, shapes
through `local.dashboard.shaping` and only lays out the result."""
