"""Reading the Developer API into rows a load can take whole.

The read of one sync pages every list, verifies it and spools it; the dlt source then hands
the rows over. Nothing here calls the load layer.

One job per module, imports running one way (each only from those above it):

    sync_record        `SyncRecord`, the row of `sync_runs`: its fields and dlt hints, filled as
                       the read goes
    extra_fields       fields the spec does not show: where each lands and how it is typed
                       (extra-fields.md)
    transform          rows from pages to typed records
    reading            reading a list so it can be trusted: every page's total, ids + dropped =
                       total
    server_clock       the run's clock: the API server's `Date`, trusted within
                       `max_clock_skew_hours`
    schema_drift       what changed in the shape of what the API sends since the last run
                       (`sync_runs.schema_changes`)
    destination_state  what the destination already holds that a read needs (`Holdings`),
                       through dlt's SQL client
    resources          the dlt resources a read hands over and their write dispositions (SCD2,
                       upsert, delete-insert)
    read               `read_api`: the read of one sync, whole and verified before dlt sees a
                       row (clock, lists, record)
    source             `devportal_source`: the dlt source; its resources hand over a finished
                       read
"""
