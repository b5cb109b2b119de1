"""Paper figures drawn from saved outputs (CSV/JSON); never trains."""
