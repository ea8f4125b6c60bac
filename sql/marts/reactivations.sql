-- reactivations: canceled live subscriptions that came back, per month, saved or won back.
--
-- Grain: one row per calendar month (`month`, its first day) from the month of the first sync
-- to the month of as_of (a reactivation is a change between two syncs, so none is seen before):
-- the months of month_spine from the first sync's on.
-- A reactivation is a `reactivated` event of subscription_events (status active where the
-- previous version was canceled), in the month of its `event_at`, when a sync first saw it
-- (`event_month`: a sync at 00:00:00 on the 1st saw what happened in the month before).
-- `saved`: seen before the canceled version's `expires_at` (the event's `previous_expires_at`):
--   the subscriber changed their mind while the paid period still ran, no use was lost.
-- `won_back`: seen at or after that expiry: the subscription had lapsed and came back (or the
--   expiry is unknown). Judged by when the sync saw it: a save that the next sync only saw
--   after the expiry counts as won back, so sparse syncs undercount saves.
-- `reactivated`: saved + won_back, the month's `reactivated` events.
-- `is_complete`: the month ended at or before as_of.
--
-- @test unique(month)
-- @test not_null(month, reactivated, saved, won_back, is_complete)

with months as (
    select
        spine.month_start,
        spine.is_complete
    from analytics.month_spine as spine
    cross join analytics.as_of as clock
    where spine.month_start >= date_trunc('month', clock.first_sync_at)
),

monthly_reactivations as (
    select
        event_month as month_start,
        count(*) as reactivated,
        count(*) filter (where event_at < previous_expires_at) as saved
    from analytics.subscription_events
    where event_type = 'reactivated'
    group by event_month
),

final as (
    select
        months.month_start::date as month,
        coalesce(monthly_reactivations.reactivated, 0) as reactivated,
        coalesce(monthly_reactivations.saved, 0) as saved,
        coalesce(monthly_reactivations.reactivated - monthly_reactivations.saved, 0) as won_back,
        months.is_complete
    from months
    left join monthly_reactivations on monthly_reactivations.month_start = months.month_start
)

select * from final
order by month
