-- reactivations: canceled live subscriptions that came back, per month, saved or won back.
--
-- Grain: one row per calendar month (`month`, its first day) from the month of the first sync
-- to the month of as_of (a reactivation is a change between two syncs, so none is seen before):
-- the months of month_spine from the first sync's on.
-- A reactivation is a `reactivated` event of subscription_events (status active where the
-- previous version was canceled), in the month of its `event_month` (a time at 00:00:00 on the
-- 1st counts in the month before).
-- `won_back`: win-backs (the event's `is_win_back`, the one definition of docs/analytics.md
--   "Win-backs", written in subscription_spells): the subscription lapsed (its canceled
--   version's `expires_at` passed, and either the sync before the comeback's saw it expired or
--   its new paid period began after that expiry) and came back; counted in the month of its
--   estimated comeback, when mrr_changes has its 'reactivated' movement (so `won_back` > 0 in
--   exactly the months mrr_movements has reactivated MRR, prices set and not 0:
--   sql/tests/reactivations_won_back_match_win_back_events, win_back_events_match_mrr_changes,
--   mrr_movements_reactivated_match_win_backs).
-- `saved`: every other reactivation: the subscriber changed their mind before the paid period
--   ran out (or the sync saw the comeback before the expiry, or the new paid period ran on from
--   it: renewed at the expiry after a save, however late a sync saw it; or the expiry is
--   unknown), no use was lost, no MRR moved; in the month of the sync that saw it.
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
        count(*) filter (where not is_win_back) as saved
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
