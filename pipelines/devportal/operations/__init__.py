"""Running devportal over months: status, the outcome files, alerts, migrate.

One job per module, imports running one way (each only from those above it):

    outcomes  what a run leaves that the warehouse cannot hold: the last failure, the models'
              build time
    status    freshness of a warehouse and its exit code
    alerts    what devportal posts to a team's chat
    migrate   `devportal migrate`: the raw dataset between DuckDB and PostgreSQL, with its
              history
"""
