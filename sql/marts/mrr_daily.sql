-- mrr_daily: monthly recurring revenue per day since the first sync.
--
-- Grain: one row per calendar day (`day`) from the day of the first sync to the day of as_of,
-- measured like daily_subscribers at `snapshot_at`: the end of the day (the midnight after
-- it), or as_of for the day as_of falls in (so the last row is MRR now: report_figures.mrr).
-- `mrr`: the sum over the live subscriptions usable at `snapshot_at` of the monthly-normalised
--   price of the period each is billed by then (mrr_spells: a yearly price / 12) valid that
--   day (`[analytics]` price book, analytics.prices), after the revenue share
--   (price_book.basis: 'gross' or 'net'). A canceled subscription counts until its
--   `expires_at` (churn at period end, as ChartMogul counts it). Summed in decimal, to 6
--   decimals. NULL without prices, and on a day some usable subscription has no price (before
--   the first `valid_from` of its period in a prices_file).
--   A subscription first seen by a sync after the first one counts from its estimated first
--   paid instant and a win-back from its estimated comeback (subscription_spells, as in
--   daily_subscribers), so MRR moves on the days subscriptions started, not on the sync days.
-- `estimated_mrr`: the part of `mrr` that rests on an estimated start: the amounts of the
--   subscriptions counted at `snapshot_at` only because their start (first paid instant or
--   win-back) was placed before the sync that first saw it (mrr_spells.estimated_until; the
--   subscriptions of daily_subscribers.estimated_usable). 0 on the last day (as_of);
--   mrr - estimated_mrr is the MRR of what the syncs had seen by then. NULL when `mrr` is.
-- `subscribers`: the live subscriptions usable at `snapshot_at` (= daily_subscribers.usable).
-- `paying_users`: distinct users (`service_id`) with such a subscription, leaving out those
--   whose every one is priced 0 (without prices: every user with one).
-- `arpu`: mrr / paying_users (NULL when either is NULL or there are none).
-- `currency`: the price book's ISO 4217 code (NULL without prices).
--
-- @test unique(day)
-- @test not_null(day, snapshot_at, subscribers, paying_users)

with clock as (
    select
        as_of,
        first_sync_at::date as first_day
    from analytics.as_of
),

snapshots as (
    select
        day,
        snapshot_at
    from analytics.day_spine
),

changes_by_day as (
    select
        day,
        sum(
            coalesce(amount_after, 0) - coalesce(amount_before, 0)
        ) as mrr_delta,
        sum(
            case when period_after is not null and amount_after is null then 1 else 0 end
            - case when period_before is not null and amount_before is null then 1 else 0 end
        ) as unpriced_delta,
        sum(
            case
                when movement in ('new', 'reactivated') then 1
                when movement = 'churned' then -1
                else 0
            end
        ) as subscribers_delta
    from analytics.mrr_changes
    group by day
),

estimated_by_day as (
    -- the estimated part of each spell adds its amount at its start and takes it away when a
    -- sync saw the subscription
    select
        greatest((edges.changed_at - interval 1 microsecond)::date, clock.first_day) as day,
        sum(edges.amount) as estimated_delta
    from (
        select
            spell_start as changed_at,
            coalesce(mrr_amount, 0) as amount
        from analytics.mrr_spells
        where estimated_until is not null
        union all
        select
            estimated_until as changed_at,
            -coalesce(mrr_amount, 0) as amount
        from analytics.mrr_spells
        where estimated_until is not null
    ) as edges
    cross join clock
    where edges.changed_at <= clock.as_of
    group by 1
),

user_changes as (
    -- each user's count of paying spells changes where one starts or ends, up to as_of (the
    -- count after a change sums the changes up to it: later ones never enter it); where they
    -- cancel out (one spell ends as the next starts, most of them) the count does not change,
    -- and neither a start nor a stop is there: left out before the running count
    select
        spell_edges.service_id,
        spell_edges.changed_at,
        sum(spell_edges.delta) as delta
    from (
        select
            service_id,
            spell_start as changed_at,
            1 as delta
        from analytics.mrr_spells
        where service_id is not null and (mrr_amount is null or mrr_amount <> 0)
        union all
        select
            service_id,
            spell_end as changed_at,
            -1 as delta
        from analytics.mrr_spells
        where service_id is not null and (mrr_amount is null or mrr_amount <> 0)
    ) as spell_edges
    -- as_of as a scalar subquery: a cross join with the clock CTE (read more than once) keeps
    -- PostgreSQL's plan for the 315k edges in one process
    where spell_edges.changed_at <= (select as_of.as_of from analytics.as_of)
    group by spell_edges.service_id, spell_edges.changed_at
    having sum(spell_edges.delta) <> 0
),

user_counts as (
    select
        service_id,
        changed_at,
        delta,
        sum(delta) over (
            partition by service_id order by changed_at nulls first rows unbounded preceding
        ) as spells_after
    from user_changes
),

users_by_day as (
    -- a user starts paying when the count leaves 0 and stops when it returns to 0
    select
        greatest((user_counts.changed_at - interval 1 microsecond)::date, clock.first_day)
            as day,
        sum(
            case
                when user_counts.spells_after > 0 and user_counts.spells_after = user_counts.delta
                    then 1
                when user_counts.spells_after = 0 and user_counts.delta < 0 then -1
                else 0
            end
        ) as users_delta
    from user_counts
    cross join clock
    where user_counts.changed_at <= clock.as_of
    group by 1
),

running as (
    -- snapshot_at is never NULL; `nulls first` is the null order every engine can spell here
    select
        snapshots.day,
        snapshots.snapshot_at,
        sum(coalesce(changes_by_day.mrr_delta, 0)) over by_day as mrr_sum,
        sum(coalesce(changes_by_day.unpriced_delta, 0)) over by_day as unpriced,
        sum(coalesce(changes_by_day.subscribers_delta, 0)) over by_day as subscribers,
        sum(coalesce(users_by_day.users_delta, 0)) over by_day as paying_users,
        sum(coalesce(estimated_by_day.estimated_delta, 0)) over by_day as estimated_sum
    from snapshots
    left join changes_by_day on changes_by_day.day = snapshots.day
    left join users_by_day on users_by_day.day = snapshots.day
    left join estimated_by_day on estimated_by_day.day = snapshots.day
    window by_day as (order by snapshots.snapshot_at nulls first rows unbounded preceding)
),

final as (
    select
        running.day,
        running.snapshot_at,
        case
            when book.has_prices and running.unpriced = 0 then cast(running.mrr_sum as double)
        end as mrr,
        cast(running.subscribers as bigint) as subscribers,
        cast(running.paying_users as bigint) as paying_users,
        case
            when book.has_prices and running.unpriced = 0
                then cast(running.mrr_sum as double)
                / nullif(cast(running.paying_users as double), 0)
        end as arpu,
        case when book.has_prices then book.currency end as currency,
        case
            when book.has_prices and running.unpriced = 0
                then cast(running.estimated_sum as double)
        end as estimated_mrr
    from running
    cross join analytics.price_book as book
)

select * from final
order by day
