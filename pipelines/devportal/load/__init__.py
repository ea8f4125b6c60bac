"""Loading one read whole or not at all: the dlt pipeline, its packages, the transaction.

One job per module, imports running one way (each only from those above it):

    pipeline     the dlt pipeline per warehouse and destination, and the DuckDB draft it writes
    rollback     how a failed load leaves the warehouse as it was: the draft removed, or
                 PostgreSQL's snapshot put back
    packages     a package loaded whole (`load_whole`), what a killed run left recovered, set-
                 aside packages
    pruning      finished packages and spools pruned so dlt's folder does not grow per run
    transaction  `writing`: the one whole-or-nothing transaction every writer goes through
    sync         `sync`: one sync in a transaction, its history counts and its summary line
"""
