-- as_of: the time every metric is relative to.
--
-- Grain: exactly one row.
-- `as_of`: the API server's clock at the latest successful sync (max `observed_at` over runs
--   whose load dlt recorded with status 0). Metrics use it instead of now(), so rebuilding the
--   models later gives the same numbers.
-- `first_sync_at`: when the subscription history starts: the first successful full sweep of
--   the subscription list (or, if no sweep ever ran, the first run that read it). Events up to
--   this time are backfill (`is_initial_load`): they describe the past, not news.
-- `successful_syncs`, `last_run_id`: which runs the numbers rest on.
--
-- @test not_null(as_of)
-- @test unique(as_of)

with successful_runs as (
    select *
    from analytics.stg_sync_runs
),

subscription_reads as (
    select *
    from successful_runs
    where read_subscriptions
),

latest_run as (
    select run_id
    from successful_runs
    order by observed_at desc, started_at desc
    limit 1
)

select
    (select max(observed_at) from successful_runs) as as_of,
    coalesce(
        (select min(observed_at) from subscription_reads where mode = 'sweep'),
        (select min(observed_at) from subscription_reads)
    ) as first_sync_at,
    (select count(*) from successful_runs) as successful_syncs,
    (select run_id from latest_run) as last_run_id
