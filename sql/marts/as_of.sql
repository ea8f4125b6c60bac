-- as_of: the time every metric is relative to, and what the subscription figures rest on.
--
-- Grain: exactly one row.
-- `as_of`: the API server's clock at the latest successful sync (max `observed_at` over runs
--   whose load dlt recorded with status 0). Metrics use it instead of now(), so rebuilding the
--   models later gives the same numbers.
-- `first_sync_at`: when the subscription history starts: the first successful full sweep of
--   the subscription list (or, if no sweep ever ran, the first run that read it). Events up to
--   this time are backfill (`is_initial_load`): they describe the past, not news.
-- `successful_syncs`, `last_run_id`: which runs the numbers rest on.
-- `has_verified_sweep`, `last_verified_sweep_at`: whether a run ever read the whole live
--   subscription list and verified it against the API's `total` (stg_sync_runs
--   `live_sweep_verified`), and the server clock of the latest one. Without one (a warehouse
--   synced only with `--window`/`--since`, an API whose pages carry no `total`, runs of a
--   devportal that recorded no verification) the current subscriptions are only those read so
--   far: a partial list, not the API's whole one.
-- `window_syncs_since_verified_sweep`, `unverified_sweeps_since_verified_sweep`: the runs that
--   read the subscription list after that sweep (all of them when there is none): window runs
--   (they read a filtered list: they add what they saw, but cannot see every cancellation), and
--   full sweeps that could not be verified (they close nothing).
--
-- @test not_null(as_of)
-- @test unique(as_of)
-- @test not_null(has_verified_sweep, window_syncs_since_verified_sweep)
-- @test not_null(unverified_sweeps_since_verified_sweep)

with successful_runs as (
    select *
    from analytics.stg_sync_runs
),

latest_run as (
    select run_id
    from successful_runs
    order by observed_at desc, started_at desc
    limit 1
),

last_verified_sweep as (
    select
        true as found,
        observed_at,
        started_at
    from successful_runs
    where live_sweep_verified
    order by observed_at desc, started_at desc
    limit 1
),

runs as (
    -- each run, and whether it read the subscription list after the last verified sweep (any
    -- run that read it, without one); one pass of aggregates below, where subqueries of
    -- their own cost DuckDB's join planner more than the build of this one row
    select
        runs.*,
        runs.read_subscriptions
        and (
            sweep.observed_at is null
            or runs.observed_at > sweep.observed_at
            or (runs.observed_at = sweep.observed_at and runs.started_at > sweep.started_at)
        ) as reads_since_verified_sweep
    from successful_runs as runs
    left join last_verified_sweep as sweep on true
),

totals as (
    select
        max(observed_at) as as_of,
        coalesce(
            min(observed_at) filter (where read_subscriptions and mode = 'sweep'),
            min(observed_at) filter (where read_subscriptions)
        ) as first_sync_at,
        count(*) as successful_syncs,
        count(*) filter (where reads_since_verified_sweep and mode = 'window')
            as window_syncs_since_verified_sweep,
        count(*) filter (
            where reads_since_verified_sweep and mode = 'sweep' and not live_sweep_verified
        ) as unverified_sweeps_since_verified_sweep
    from runs
),

final as (
    select
        totals.as_of,
        totals.first_sync_at,
        totals.successful_syncs,
        latest_run.run_id as last_run_id,
        coalesce(sweep.found, false) as has_verified_sweep,
        sweep.observed_at as last_verified_sweep_at,
        totals.window_syncs_since_verified_sweep,
        totals.unverified_sweeps_since_verified_sweep
    from totals
    left join latest_run on true
    left join last_verified_sweep as sweep on true
)

select * from final
