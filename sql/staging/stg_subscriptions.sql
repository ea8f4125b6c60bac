-- stg_subscriptions: every recorded version of every subscription (SCD2 history), live and test.
--
-- Grain: one row per (id, is_test, valid_from). Live and test subscriptions are two lists whose
-- ids may overlap: a subscription is (id, is_test). A version is one state of a subscription as
-- the sync saw it; `valid_to` is when a later sync saw it change or vanish, NULL while current.
-- Typing: dlt stores the SCD2 validity as TIMESTAMPTZ; here it becomes naive UTC like
-- `expires_at` and `sync_runs.observed_at`, so every time in the models compares directly.
-- Nothing is filtered or derived here: `subscription_versions` adds the as_of cut and ordering.
--
-- @test unique(id, is_test, valid_from)
-- @test not_null(id, valid_from, is_test)

select
    id,
    service_id,
    status,
    expires_at,
    expires_at_raw,
    is_test,
    dq_flags,
    -- the same instant as a naive UTC timestamp, whatever the session's time zone
    _dlt_valid_from at time zone 'UTC' as valid_from,
    _dlt_valid_to at time zone 'UTC' as valid_to
from devportal.subscriptions
