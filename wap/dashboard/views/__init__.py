"""The dashboard's pages: each `render()` loads through `wap.dashboard.source`, shapes
through `wap.dashboard.shaping` and only lays out the result."""
