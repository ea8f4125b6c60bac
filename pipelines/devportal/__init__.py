"""devportal: the Developer Portal API data-sync pipeline (dlt -> DuckDB -> SQL analytics)."""

__version__ = "0.1.0"
