-- stg_sync_runs: the sync runs whose load dlt recorded as complete.
--
-- Grain: one row per successful sync run (`run_id`). A run is successful when its load package
-- appears in dlt's `_dlt_loads` with status 0; a run still in flight or never loaded is left
-- out, so nothing downstream reads a half-finished run's clock.
-- `observed_at` is the API server's clock at the start of the run: the SCD2 boundary stamped on
-- the versions that run wrote. `read_subscriptions` says whether the run read the subscription
-- list at all (a `--resources user_settings` run did not).
-- `live_sweep`: the run read the whole live subscription list, unfiltered (no `start`/`end`
--   window, no `user_id`/`id`, not `is_test`), as recorded in `sweeps` (one JSON object per
--   list read: `endpoint`, `params`, `verified`, ...); a window run's read is filtered.
-- `live_sweep_verified`: and that read was verified (every page carried the same `total` and
--   the ids read added up to it): the subscriptions the warehouse holds as current are then
--   the whole list at `observed_at`. False for an API whose pages carry no `total`, and for
--   runs of devportal versions that recorded no `verified`.
--
-- @test unique(run_id)
-- @test not_null(run_id, observed_at, live_sweep, live_sweep_verified)
-- @test accepted_values(mode: sweep, window)

with successful_loads as (
    select load_id
    from devportal._dlt_loads
    where status = 0
),

successful_runs as (
    select *
    from devportal.sync_runs
    where _dlt_load_id in (select load_id from successful_loads)
),

-- one row per list read recorded in `sweeps` (a JSON array): positions past its end read as
-- NULL and are dropped. A run reads at most three lists today (live and test subscriptions,
-- user settings); 64 positions leave room without a function sqlglot cannot translate.
list_reads as (
    select
        runs.run_id,
        cast(runs.sweeps as json) -> positions.i as list_read
    from successful_runs as runs
    cross join generate_series(0, 63) as positions (i)
),

list_read_fields as (
    select
        run_id,
        list_read ->> 'endpoint' as endpoint,
        list_read ->> 'verified' as verified,
        (list_read -> 'params') ->> 'start' as param_start,
        (list_read -> 'params') ->> 'end' as param_end,
        (list_read -> 'params') ->> 'user_id' as param_user_id,
        (list_read -> 'params') ->> 'id' as param_id,
        lower(coalesce((list_read -> 'params') ->> 'is_test', 'false')) as param_is_test
    from list_reads
    where list_read is not null
),

live_sweeps as (
    select
        run_id,
        count(*) as reads,
        count(*) filter (where verified = 'true') as verified_reads
    from list_read_fields
    where
        endpoint like '%/subscriptions'
        and param_start is null
        and param_end is null
        and param_user_id is null
        and param_id is null
        and param_is_test in ('false', '0')
    group by run_id
)

select
    runs.run_id,
    runs.mode,
    runs.include_test,
    runs.resources,
    -- `resources` is a comma list: one of its items is `subscriptions`
    ',' || runs.resources || ',' like '%,subscriptions,%' as read_subscriptions,
    coalesce(live_sweeps.reads, 0) > 0 as live_sweep,
    coalesce(live_sweeps.verified_reads, 0) > 0 as live_sweep_verified,
    runs.started_at,
    runs.observed_at,
    runs.window_start,
    runs.window_end,
    runs.data_quality_problems,
    runs._dlt_load_id as load_id
from successful_runs as runs
left join live_sweeps on runs.run_id = live_sweeps.run_id
