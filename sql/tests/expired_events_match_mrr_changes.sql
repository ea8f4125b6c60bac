-- expired_events_match_mrr_changes: ties the `expired` events of analytics.subscription_events
-- (and so monthly_churn's, monthly_renewals' and churn_by_platform's churn) to the 'churned'
-- movements of analytics.mrr_changes, one by one, after the first sync.
--
-- Expects: every lapse after the first sync (an `expired` event: a canceled subscription's use
--   ran out at its `expires_at`, whether it was won back later or not) of a subscription in
--   use up to it (a subscription_spells stretch reaches the expiry: not one the API stopped
--   listing before it, nor one first seen already past it and never usable) is a 'churned'
--   MRR change of that subscription at that instant; and every 'churned' MRR change after the
--   first sync at the `expires_at` of a canceled version (one no later version carried on,
--   active or other, with that same expiry: a save whose renewal no sync has seen yet) is such
--   an event, the sync that saw the cancellation before the expiry or after it. So
--   a month's churned subscriptions are the same in monthly_churn and in mrr_movements, a lapse
--   later won back included (the other 'churned' changes: a subscription no longer listed, or
--   an active one whose renewal no sync has seen yet at as_of, are not lapses).
-- Returns: the lapses only one side has, with the month each counts in.

with clock as (
    select first_sync_at from analytics.as_of
),
expiries as (
    select events.subscription_id, events.event_at, events.event_month
    from analytics.subscription_events as events
    cross join clock
    where events.event_type = 'expired'
        and events.event_at > clock.first_sync_at
        and exists (
            select 1 from analytics.subscription_spells as spells
            where spells.subscription_id = events.subscription_id
                and spells.spell_start < events.event_at
                and spells.spell_end >= events.event_at
        )
),
lapse_changes as (
    select changes.subscription_id, changes.changed_at, changes.day
    from analytics.mrr_changes as changes
    cross join clock
    where changes.movement = 'churned'
        and changes.changed_at > clock.first_sync_at
        and exists (
            -- a canceled version expiring then, not saved with that expiry by a later one
            select 1
            from analytics.subscription_versions as canceled
            where canceled.id = changes.subscription_id
                and not canceled.is_test
                and canceled.status = 'canceled'
                and canceled.expires_at = changes.changed_at
                and not exists (
                    select 1 from analytics.subscription_versions as later
                    where later.id = canceled.id
                        and not later.is_test
                        and later.version_number > canceled.version_number
                        and later.expires_at = canceled.expires_at
                        and later.status <> 'canceled'
                )
        )
),
churned_changes as (
    select changes.subscription_id, changes.changed_at
    from analytics.mrr_changes as changes
    where changes.movement = 'churned'
),
events_without_change as (
    select expiries.subscription_id, expiries.event_at as lapsed_at,
           expiries.event_month::date as month, 'expired event, no churned MRR' as problem
    from expiries
    left join churned_changes
        on churned_changes.subscription_id = expiries.subscription_id
        and churned_changes.changed_at = expiries.event_at
    where churned_changes.subscription_id is null
),
changes_without_event as (
    select lapse_changes.subscription_id, lapse_changes.changed_at as lapsed_at,
           date_trunc('month', lapse_changes.day::timestamp)::date as month,
           'churned MRR, no expired event' as problem
    from lapse_changes
    left join analytics.subscription_events as events
        on events.subscription_id = lapse_changes.subscription_id
        and events.event_type = 'expired'
        and events.event_at = lapse_changes.changed_at
    where events.subscription_id is null
)
select * from events_without_change
union all
select * from changes_without_event
