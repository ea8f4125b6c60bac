"""`make bench`: devportal against dlt's `rest_api` peer and the HTTP floor (see README.md)."""
