-- stg_sync_runs: the sync runs whose load dlt recorded as complete.
--
-- Grain: one row per successful sync run (`run_id`). A run is successful when its load package
-- appears in dlt's `_dlt_loads` with status 0; a run still in flight or never loaded is left
-- out, so nothing downstream reads a half-finished run's clock.
-- `observed_at` is the API server's clock at the start of the run: the SCD2 boundary stamped on
-- the versions that run wrote. `read_subscriptions` says whether the run read the subscription
-- list at all (a `--resources user_settings` run did not).
--
-- @test unique(run_id)
-- @test not_null(run_id, observed_at)
-- @test accepted_values(mode: sweep, window)

with successful_loads as (
    select load_id
    from devportal._dlt_loads
    where status = 0
)

select
    runs.run_id,
    runs.mode,
    runs.include_test,
    runs.resources,
    -- `resources` is a comma list: one of its items is `subscriptions`
    ',' || runs.resources || ',' like '%,subscriptions,%' as read_subscriptions,
    runs.started_at,
    runs.observed_at,
    runs.window_start,
    runs.window_end,
    runs.data_quality_problems,
    runs._dlt_load_id as load_id
from devportal.sync_runs as runs
where runs._dlt_load_id in (select load_id from successful_loads)
