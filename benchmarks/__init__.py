"""`make bench`: devportal against dlt's declarative `rest_api` peer and the HTTP floor.

`python -m benchmarks.run` (the Makefile's `bench` target) runs every contender as its own
process against a sandbox in another process, interleaved round by round, and writes
`benchmarks/results/latest.json` and `latest.md` with the machine description.
"""
