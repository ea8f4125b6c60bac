-- new_events_match_mrr_changes: ties the `new` events of analytics.subscription_events (and so
-- monthly_churn's `new` and cohort_retention's cohorts) to the 'new' movements of
-- analytics.mrr_changes, one by one, after the first sync.
--
-- Expects: a subscription first seen after the first sync is new at one instant in both: its
--   `new` event's `event_at` (its estimated first paid instant, subscription_spells) is a 'new'
--   MRR change of it, unless it never had a use to count (no subscription_spells row: first
--   seen already past an expiry before the sync before); and a subscription's first MRR change
--   after the first sync, when 'new', is its `new` event. So monthly_churn.new and
--   mrr_movements.new_mrr count a subscription in the same month.
-- Returns: the starts only one side has, with the month each counts in.

with clock as (
    select first_sync_at from analytics.as_of
),
new_events as (
    select events.subscription_id, events.event_at, events.event_month
    from analytics.subscription_events as events
    where events.event_type = 'new' and not events.is_initial_load
),
first_changes as (
    select changes.subscription_id, changes.changed_at, changes.day, changes.movement
    from analytics.mrr_changes as changes
    where changes.changed_at = (
        select min(earlier.changed_at) from analytics.mrr_changes as earlier
        where earlier.subscription_id = changes.subscription_id
    )
),
events_without_change as (
    select new_events.subscription_id, new_events.event_at as started_at,
           new_events.event_month::date as month, 'new event, no new MRR' as problem
    from new_events
    left join analytics.mrr_changes as changes
        on changes.subscription_id = new_events.subscription_id
        and changes.changed_at = new_events.event_at
        and changes.movement = 'new'
    where changes.subscription_id is null
        and exists (
            select 1 from analytics.subscription_spells as spells
            where spells.subscription_id = new_events.subscription_id
        )
),
changes_without_event as (
    select first_changes.subscription_id, first_changes.changed_at as started_at,
           date_trunc('month', first_changes.day::timestamp)::date as month,
           'new MRR, no new event' as problem
    from first_changes
    cross join clock
    left join new_events
        on new_events.subscription_id = first_changes.subscription_id
        and new_events.event_at = first_changes.changed_at
    where first_changes.movement = 'new'
        and first_changes.changed_at > clock.first_sync_at
        and new_events.subscription_id is null
)
select * from events_without_change
union all
select * from changes_without_event
