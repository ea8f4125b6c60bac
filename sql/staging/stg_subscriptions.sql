-- stg_subscriptions: every recorded version of every subscription (SCD2 history), live and test.
--
-- Grain: one row per (id, is_test, valid_from). Live and test subscriptions are two lists whose
-- ids may overlap: a subscription is (id, is_test). A version is one state of a subscription as
-- the sync saw it; `valid_to` is when a later sync saw it change or vanish, NULL while current.
-- Typing: dlt stores the SCD2 validity as TIMESTAMPTZ; here it becomes naive UTC like
-- `expires_at` and `sync_runs.observed_at`, so every time in the models compares directly.
-- `status_sent`: the status exactly as the API sent it (NULL when it sent none).
-- `status`: how every figure downstream treats it (churn, renewals, cancellations, expiries):
--   'active' or 'canceled' for those two; for any other status the treatment `[analytics]
--   status_map` gives it (the seed analytics.status_map, e.g. trialing = "active", past_due =
--   "canceled"); else 'other'. The default, 'other': usable until `expires_at` like any
--   subscription, never a cancellation and never churn, and counted as neither active nor
--   canceled (the report names each such status on its own line). A missing status is 'other'.
-- `expiry_kind`: what `expires_at` says about the end of use (docs/analytics.md "Subscriptions
--   without a usable expiry"): 'date' when it was read (the spec format, ISO 8601, or a Unix
--   epoch number read as UTC, whose text stays in `expires_at_raw`); 'lifetime' when the API
--   sent no expiry (null, or no `expires_at` key: `expires_at_raw` NULL too): a plan with no
--   end, usable while listed until a later version says otherwise; 'unreadable' when it sent
--   something that is no date (a MySQL zero date, an empty string, text, an object: kept in
--   `expires_at_raw`, flagged in `dq_flags`): listed, never usable, never churn.
-- Nothing is filtered here: `subscription_versions` adds the as_of cut and ordering.
-- An account with no subscription yet (a sync read an empty list: dlt created no table) is a
-- valid warehouse: an empty relation stands in, and every model builds, empty.
--
-- @optional devportal.subscriptions(id bigint, service_id bigint, status varchar, expires_at timestamp, expires_at_raw varchar, is_test boolean, dq_flags varchar, _dlt_valid_from timestamptz, _dlt_valid_to timestamptz)
-- @test unique(id, is_test, valid_from)
-- @test not_null(id, valid_from, is_test, status)
-- @test accepted_values(status: active, canceled, other)
-- @test not_null(expiry_kind)
-- @test accepted_values(expiry_kind: date, lifetime, unreadable)

select
    raw.id,
    raw.service_id,
    coalesce(treatments.treated_as, 'other') as status,
    raw.status as status_sent,
    raw.expires_at,
    raw.expires_at_raw,
    case
        when raw.expires_at is not null then 'date'
        when raw.expires_at_raw is null then 'lifetime'
        else 'unreadable'
    end as expiry_kind,
    raw.is_test,
    raw.dq_flags,
    -- the same instant as a naive UTC timestamp, whatever the session's time zone
    raw._dlt_valid_from at time zone 'UTC' as valid_from,
    raw._dlt_valid_to at time zone 'UTC' as valid_to
from devportal.subscriptions as raw
left join analytics.status_map as treatments on treatments.status = raw.status
