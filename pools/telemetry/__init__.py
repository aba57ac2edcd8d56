"""What the GPUs are doing, read from monitoring systems: plain Python with no Django import, so the
worker and engine-like code can use it. ``prometheus`` reads the DCGM exporter's series from a Prometheus server.
"""
