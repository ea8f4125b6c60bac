-- subscription_versions: the subscription history cut at as_of, ordered, with neighbours.
--
-- Grain: one row per (id, is_test, version_number), live and test: a live and a test
-- subscription may share an id and are two histories; version 1 is the first one seen.
-- Versions first seen after as_of (a run whose load did not complete) are left out, and a
-- version closed after as_of counts as current (`valid_to` NULL), so a rebuild is repeatable.
-- `is_last_version`: no later version exists. It is also `is_current` unless a full sweep no
--   longer listed the id: then `valid_to` is when it vanished (the subscription was removed).
-- `expiry_kind`: stg_subscriptions' ('date', 'lifetime': no expiry sent, 'unreadable').
-- `use_ends_at`: the end of use this version's own expiry gives: `expires_at`; for a lifetime
--   plan (no expiry sent) never, written 9999-12-31 00:00:00 (usable while the version lasts,
--   whatever its status: the API gave no end); NULL when the expiry was unreadable (the
--   version vouches for no use of its own).
-- `usable_until`: the end of the use this version vouches for: its own `use_ends_at`, or the
--   next version's if later. An active subscription renews when `expires_at` passes; the sync
--   only sees the renewal at its next run, and the later expiry proves the use went on.
-- `status`: the treatment (active, canceled or other) of `status_sent`, the status as the API
--   sent it (see stg_subscriptions and `[analytics] status_map`); `previous_status` is the
--   previous version's treatment. A change of `status_sent` within one treatment (trialing to
--   active with trialing = "active") is a version but no event.
--
-- @test unique(id, is_test, version_number)
-- @test not_null(id, version_number, valid_from, is_test, status)
-- @test accepted_values(status: active, canceled, other)
-- @test accepted_values(expiry_kind: date, lifetime, unreadable)

with versions as (
    select
        stg.*,
        case
            when stg.expiry_kind = 'lifetime' then cast('9999-12-31 00:00:00' as timestamp)
            else stg.expires_at
        end as use_ends_at,
        clock.as_of
    from analytics.stg_subscriptions as stg
    cross join analytics.as_of as clock
    where stg.valid_from <= clock.as_of
),

sequenced as (
    select
        id,
        row_number() over by_time as version_number,
        service_id,
        status,
        status_sent,
        expires_at,
        expires_at_raw,
        expiry_kind,
        use_ends_at,
        is_test,
        dq_flags,
        valid_from,
        case when valid_to <= as_of then valid_to end as valid_to,
        lag(status) over by_time as previous_status,
        lag(expires_at) over by_time as previous_expires_at,
        lead(expires_at) over by_time as next_expires_at,
        lead(use_ends_at) over by_time as next_use_ends_at,
        lead(valid_from) over by_time is null as is_last_version
    from versions
    window by_time as (partition by id, is_test order by valid_from)
),

final as (
    select
        id,
        version_number,
        service_id,
        status,
        status_sent,
        expires_at,
        expires_at_raw,
        expiry_kind,
        use_ends_at,
        is_test,
        dq_flags,
        valid_from,
        valid_to,
        valid_to is null as is_current,
        is_last_version,
        previous_status,
        previous_expires_at,
        next_expires_at,
        -- greatest() skips NULLs: an unreadable expiry defers to the other version's
        greatest(use_ends_at, next_use_ends_at) as usable_until
    from sequenced
)

select * from final
order by id, is_test, version_number
