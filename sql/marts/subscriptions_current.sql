-- subscriptions_current: each subscription as of the latest successful sync.
--
-- Grain: one row per subscription ever seen, (id, is_test): live and test subscriptions may
-- share an id and never mix; from its latest version (at or before as_of).
-- `status_sent`: the status as the API sent it; `status`: its treatment, 'active', 'canceled'
--   or 'other' (stg_subscriptions: a status beyond the two the spec shows is what `[analytics]
--   status_map` says, else 'other': usable until `expires_at`, never a cancellation).
-- `first_seen_at`: when a sync first listed it (the API has no creation date).
-- `canceled_at`: when the current cancellation was first observed (the start of the trailing run
--   of versions treated as canceled); NULL unless the status is canceled. The cancellation
--   itself happened between that sync and the one before.
-- `is_removed`: a full sweep no longer listed the id; `removed_at` is that sweep's time.
-- `is_usable`: listed, and `expires_at` > as_of (canceled subscriptions stay usable until then);
--   a lifetime plan (`expiry_kind` 'lifetime': no expiry sent) while listed; never one whose
--   expiry is unreadable (`expiry_kind` 'unreadable': listed, not usable, not churn; the report
--   counts these on a line of their own, `expiry_unreadable`).
-- `expiry_kind`: the latest version's (stg_subscriptions: 'date', 'lifetime', 'unreadable').
-- `days_left`: whole days of use left, rounded up (so 1 means "within a day"); 0 when not usable,
--   NULL when `expires_at` is unknown (a lifetime plan, or unreadable: see `expires_at_raw`,
--   `dq_flags`).
--
-- @test unique(id, is_test)
-- @test not_null(id, first_seen_at, is_usable, is_test, is_removed)
-- @test not_null(status)
-- @test accepted_values(status: active, canceled, other)
-- @test accepted_values(expiry_kind: date, lifetime, unreadable)

with latest_versions as (
    select
        versions.*,
        coalesce(versions.is_current and versions.use_ends_at > clock.as_of, false) as is_usable,
        date_diff('second', clock.as_of, versions.expires_at) as seconds_left
    from analytics.subscription_versions as versions
    cross join analytics.as_of as clock
    where versions.is_last_version
),

first_versions as (
    -- version 1 is the first seen (subscription_versions numbers them by valid_from)
    select
        id,
        is_test,
        valid_from as first_seen_at
    from analytics.subscription_versions
    where version_number = 1
),

cancellations as (
    -- a cancellation starts at a canceled version whose previous one was not (or at the
    -- first version): the latest start is where the trailing run of canceled versions begins
    select
        id,
        is_test,
        max(valid_from) as last_cancellation_at
    from analytics.subscription_versions
    where status = 'canceled' and previous_status is distinct from 'canceled'
    group by id, is_test
),

final as (
    select
        latest_versions.id,
        latest_versions.service_id,
        latest_versions.status,
        latest_versions.status_sent,
        latest_versions.expires_at,
        latest_versions.is_test,
        first_versions.first_seen_at,
        case
            when latest_versions.status = 'canceled' then cancellations.last_cancellation_at
        end as canceled_at,
        latest_versions.is_usable,
        case
            when latest_versions.expires_at is null then null
            when latest_versions.is_usable then ceil(latest_versions.seconds_left / 86400)::integer
            else 0
        end as days_left,
        not latest_versions.is_current as is_removed,
        latest_versions.valid_to as removed_at,
        latest_versions.valid_from as last_changed_at,
        -- the versions are numbered from 1: the latest's number is their count
        latest_versions.version_number as version_count,
        latest_versions.expires_at_raw,
        latest_versions.expiry_kind,
        latest_versions.dq_flags
    from latest_versions
    inner join first_versions using (id, is_test)
    left join cancellations using (id, is_test)
)

select * from final
order by id, is_test
