-- subscription_lifetimes: how long each live subscription has lasted, from first seen to churn.
--
-- Grain: one row per live subscription (`subscription_id`).
-- `first_seen_at`: when a sync first listed it (subscriptions_current; the API gives no
--   creation date, so a lifetime starts there: it misses the time between the creation and the
--   sync that first saw it).
-- `churned_at`: its first `expired` event (subscription_events: its first lapse, a canceled
--   version's `expires_at` <= as_of), NULL if it has none; `is_churned`: it has one. Churned
--   means what it means in monthly_churn: a lapse later won back ends the lifetime at that
--   expiry (time to first churn); the comeback is a win-back (reactivations), not a new
--   lifetime, and does not undo the churn.
-- `is_censored`: not churned: still usable at as_of, or no longer listed by the API
--   (`is_removed`), or due with no renewal seen yet; its lifetime is at least `lifetime_days`.
-- `observed_until`: where the lifetime ends: `churned_at`; else, for a subscription the API
--   stopped listing, when a full sweep first missed it (`removed_at`: the history ends there);
--   else as_of.
-- `is_backfill`: the first sync listed it (first_seen_at <= as_of.first_sync_at): it started
--   at an unknown time before, so its lifetime is left-truncated and unknown: `lifetime_days`
--   is NULL and survival_curve leaves it out (without the start, left truncation cannot be
--   corrected). Its churn and censoring are still here.
-- `lifetime_days`: whole days (24 hours, rounded down) from `first_seen_at` to
--   `observed_until`; 0 when the subscription had already expired when first seen.
--
-- @test unique(subscription_id)
-- @test not_null(subscription_id, first_seen_at, is_backfill, is_churned, is_censored)
-- @test not_null(is_removed, observed_until)

with churns as (
    select
        subscription_id,
        min(event_at) as churned_at
    from analytics.subscription_events
    where event_type = 'expired'
    group by subscription_id
),

lifetimes as (
    select
        current_subscriptions.id as subscription_id,
        current_subscriptions.service_id,
        current_subscriptions.first_seen_at,
        current_subscriptions.first_seen_at <= clock.first_sync_at as is_backfill,
        churns.churned_at,
        churns.churned_at is not null as is_churned,
        churns.churned_at is null as is_censored,
        current_subscriptions.is_removed,
        case
            when churns.churned_at is not null then churns.churned_at
            when current_subscriptions.is_removed then current_subscriptions.removed_at
            else clock.as_of
        end as observed_until
    from analytics.subscriptions_current as current_subscriptions
    cross join analytics.as_of as clock
    left join churns on churns.subscription_id = current_subscriptions.id
    where not current_subscriptions.is_test
),

final as (
    select
        subscription_id,
        service_id,
        first_seen_at,
        is_backfill,
        churned_at,
        is_churned,
        is_censored,
        is_removed,
        observed_until,
        case
            when not is_backfill
                then greatest(
                    floor(date_diff('second', first_seen_at, observed_until) / 86400), 0
                )::integer
        end as lifetime_days
    from lifetimes
)

select * from final
order by subscription_id
