"""gsmcpd benchmarks: `python -m bench` (see docs/PERFORMANCE.md)."""
