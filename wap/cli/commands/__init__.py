"""`wap`'s commands, grouped by what they do; wap/cli/app.py registers them in help order."""
