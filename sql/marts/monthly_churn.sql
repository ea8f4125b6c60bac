-- monthly_churn: churn per calendar month, live subscriptions.
--
-- Grain: one row per calendar month (`month`, its first day) from the earliest month with data
-- (the first sync, or an earlier observed expiry: churn is counted when the expiry falls) to
-- the month of as_of; the months of month_spine from there on. A month holds the instants after
-- its first up to its end (month_spine): an event exactly at 00:00:00 on the 1st counts in the
-- month before (subscription_events.event_month), so every month's flows lead from its base to
-- the next month's: a subscription first seen then is in the next month's base and new in the
-- month before, one expiring then was usable through the month before (in its base, not in the
-- next month's) and churned in it.
-- `churned`: lapses whose `expires_at` falls in the month and is <= as_of (the `expired`
--   events of the month, backfill included: an expiry date is a fact even when the sync learned
--   it later): a canceled subscription whose paid use ran out, whether it is gone or came back
--   later. A lapse later won back is churn in the month it expired and a win-back (`won_back`)
--   in the month it came back, as ChartMogul counts it and as mrr_movements has churned then
--   reactivated MRR (docs/analytics.md "Win-backs"); a save (reactivated before the expiry, or
--   seen late with contiguous paid periods) is no churn. So a month's churned subscriptions are
--   its `expired` events and, after the first sync, its 'churned' mrr_changes of a canceled
--   subscription at its expiry (sql/tests/expired_events_match_mrr_changes).
-- `won_back`: subscriptions that came back after a lapse, in the month of their comeback
--   (reactivations.won_back; mrr_movements.reactivated_mrr). NULL where `new` is.
-- `churned_monthly`, `churned_yearly`, `churned_unknown`: `churned` split by the subscription's
--   period in billing_periods (inferred from its whole history up to as_of); they sum to it.
-- `cancellations`, `new`: `canceled` / `new` events observed in the month, backfill excluded;
--   NULL for months that ended before the first sync (nothing was observed then, which is not 0).
-- `subscribers_at_start`: live subscriptions usable at the first instant of the month
--   (month_start_bases summed over the platforms: month_start_subscribers' rule, from each
--   one's first paid instant as the syncs revealed it, as daily_subscribers counts them).
-- `churn_rate`: churned / subscribers_at_start (NULL when there were none).
-- `is_complete`: the month ended at or before as_of (the as_of month is still running).
-- `is_estimate`: the month started before the first sync, so `subscribers_at_start` is an
--   estimate. The API gives no creation date; the estimate counts the subscriptions the first
--   sync listed whose `expires_at` (as then listed) was after the month start, i.e. it assumes
--   every one of them already existed. It is an upper bound, so the churn rate of these months
--   is a lower bound; `churned` in them is a lower bound too (subscriptions the API dropped
--   before the first sync are not seen at all).
--
-- @test unique(month)
-- @test not_null(month, churned, subscribers_at_start, is_estimate, is_complete)
-- @test not_null(churned_monthly, churned_yearly, churned_unknown)

with first_month as (
    -- the earliest month with data: the first sync's, or an earlier observed expiry's
    select
        least(
            date_trunc('month', clock.first_sync_at),
            (select min(events.event_month) from analytics.subscription_events as events)
        ) as month_start
    from analytics.as_of as clock
),

months as (
    select spine.*
    from analytics.month_spine as spine
    inner join first_month on spine.month_start >= first_month.month_start
),

bases as (
    -- month_start_bases summed over the platforms (month_start_subscribers' rule, counted
    -- without its rows; sql/tests/monthly_churn_bases_are_month_start_subscribers holds the two
    -- equal)
    select
        month_start,
        cast(sum(subscribers) as bigint) as subscribers
    from analytics.month_start_bases
    group by month_start
),

monthly_events as (
    select
        event_month as month_start,
        count(*) filter (where event_type = 'expired') as churned,
        count(*) filter (where event_type = 'canceled' and not is_initial_load) as cancellations,
        count(*) filter (where event_type = 'new' and not is_initial_load) as new_subscriptions,
        count(*) filter (where event_type = 'reactivated' and is_win_back) as won_back
    from analytics.subscription_events
    group by 1
),

churned_by_period as (
    -- only the expiries need their subscription's billing period
    select
        expiries.event_month as month_start,
        count(*) filter (where periods.period = 'monthly') as churned_monthly,
        count(*) filter (where periods.period = 'yearly') as churned_yearly,
        count(*) filter (where periods.period = 'unknown') as churned_unknown
    from analytics.subscription_events as expiries
    inner join analytics.billing_periods as periods
        on periods.subscription_id = expiries.subscription_id
    where expiries.event_type = 'expired'
    group by 1
),

final as (
    select
        months.month_start::date as month,
        coalesce(monthly_events.churned, 0) as churned,
        coalesce(churned_by_period.churned_monthly, 0) as churned_monthly,
        coalesce(churned_by_period.churned_yearly, 0) as churned_yearly,
        coalesce(churned_by_period.churned_unknown, 0) as churned_unknown,
        case
            when months.month_end > clock.first_sync_at
                then coalesce(monthly_events.cancellations, 0)
        end as cancellations,
        case
            when months.month_end > clock.first_sync_at
                then coalesce(monthly_events.new_subscriptions, 0)
        end as new,
        case
            when months.month_end > clock.first_sync_at
                then coalesce(monthly_events.won_back, 0)
        end as won_back,
        coalesce(bases.subscribers, 0) as subscribers_at_start,
        coalesce(monthly_events.churned, 0) / nullif(coalesce(bases.subscribers, 0), 0)
            as churn_rate,
        months.is_before_first_sync as is_estimate,
        months.is_complete
    from months
    left join bases using (month_start)
    left join monthly_events using (month_start)
    left join churned_by_period using (month_start)
    cross join analytics.as_of as clock
)

select * from final
order by month
