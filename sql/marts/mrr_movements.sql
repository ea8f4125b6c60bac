-- mrr_movements: how MRR moved each month, by kind of movement.
--
-- Grain: one row per calendar month (`month`, its first day) from the month of the first sync
-- to the month of as_of (month_spine from there).
-- `mrr_start`: MRR at the month's start: mrr_daily of the previous month's last day; for the
--   first month (`is_partial_start`: the history begins within it, at the first sync) the
--   first day's MRR, so its movements are those after the first day.
-- `mrr_end`: mrr_daily of the month's last day measured (as_of's day in the running month).
-- The movements are the month's mrr_changes (by the day each shows in), per subscription:
--   `new_mrr`: subscriptions starting to use (new: from the first paid instant as the syncs
--   revealed it, subscription_spells); `reactivated_mrr`: win-backs, subscriptions that lapsed
--   and came back (docs/analytics.md "Win-backs": the subscriptions of reactivations.won_back,
--   in the same months; sql/tests/mrr_movements_reactivated_match_win_backs); `churned_mrr` (a positive amount): use that ran out (at
--   `expires_at`: a canceled subscription churns at its period's end) or whose subscription the
--   API stopped listing; `expansion_mrr` / `contraction_mrr` (positive): a switch of billing
--   period (monthly <-> yearly) that raised / lowered its monthly-normalised amount;
--   `price_change_mrr` (signed): the price book's change for subscriptions that kept their
--   period; `net_change`: their sum. Exactly: mrr_start + new_mrr + expansion_mrr -
--   contraction_mrr - churned_mrr + reactivated_mrr + price_change_mrr = mrr_end (decimal
--   arithmetic to 6 decimals; sql/tests/mrr_movements_add_up.sql).
-- The convention (dbt's mrr-playbook; ChartMogul: new, expansion, contraction, churn,
--   reactivation) and where devportal differs, and why:
--   * per subscription, not per customer: the API's unit is the subscription; a user's second
--     subscription is new MRR, not expansion (mrr_daily.paying_users counts users).
--   * movements are measured at every change the syncs observed, not by comparing month-end
--     snapshots (mrr-playbook), so a subscription that came and went within a month shows as
--     both; times are when a sync saw the change, except churn, at `expires_at`, and a start
--     of use (new, win-back) first seen by a later sync than the first, at its estimated first
--     paid instant between that sync and the one before (subscription_spells).
--   * expansion / contraction are billing-period switches only: the API has no plans or seats,
--     and the period is all that changes what a subscriber pays (billing_segments).
--   * the price-change effect is its own column: a change of the price book (prices_file) moves
--     every subscriber of that period at once, which is neither an upgrade nor a downgrade.
--   * a win-back after expiry is reactivation (as ChartMogul); a cancellation reversed before
--     expiry moves nothing (a canceled subscription counts until `expires_at`).
-- All money columns are NULL without prices. Where a prices_file leaves a time without a price,
-- `mrr_start` / `mrr_end` are NULL when that day's MRR is (mrr_daily), and the movements are
-- NULL in a month whose start, end or changes touch a subscription without a price.
-- `is_complete`: the month ended at or before as_of.
--
-- @test unique(month)
-- @test not_null(month, is_complete, is_partial_start)

with clock as (
    select
        first_sync_at,
        first_sync_at::date as first_day
    from analytics.as_of
),

months as (
    select
        spine.month_start,
        spine.month_end,
        spine.is_complete,
        spine.month_start <= clock.first_sync_at as is_partial_start
    from analytics.month_spine as spine
    cross join clock
    where spine.month_end > clock.first_sync_at
),

month_ends as (
    -- the MRR of the last day measured in each month, and of the day before it began
    select
        months.month_start,
        (
            select daily.mrr
            from analytics.mrr_daily as daily
            where daily.day < months.month_end::date
            order by daily.day desc
            limit 1
        ) as mrr_end,
        (
            select daily.mrr
            from analytics.mrr_daily as daily
            where daily.day < months.month_start::date or daily.day = clock.first_day
            order by daily.day desc
            limit 1
        ) as mrr_start
    from months
    cross join clock
),

movements as (
    select
        date_trunc('month', day::timestamp) as month_start,
        count(*) filter (where not is_priced) as unpriced,
        sum(amount_after) filter (where movement = 'new') as new_mrr,
        sum(amount_after - amount_before) filter (where movement = 'expansion')
            as expansion_mrr,
        sum(amount_before - amount_after) filter (where movement = 'contraction')
            as contraction_mrr,
        sum(amount_before) filter (where movement = 'churned') as churned_mrr,
        sum(amount_after) filter (where movement = 'reactivated') as reactivated_mrr,
        sum(amount_after - amount_before) filter (where movement = 'price_change')
            as price_change_mrr
    from analytics.mrr_changes
    where not is_base
    group by 1
),

measured as (
    select
        months.month_start,
        months.is_complete,
        months.is_partial_start,
        month_ends.mrr_start,
        month_ends.mrr_end,
        book.has_prices
        and month_ends.mrr_start is not null
        and month_ends.mrr_end is not null
        and coalesce(movements.unpriced, 0) = 0 as is_priced,
        coalesce(movements.new_mrr, 0) as new_mrr,
        coalesce(movements.expansion_mrr, 0) as expansion_mrr,
        coalesce(movements.contraction_mrr, 0) as contraction_mrr,
        coalesce(movements.churned_mrr, 0) as churned_mrr,
        coalesce(movements.reactivated_mrr, 0) as reactivated_mrr,
        coalesce(movements.price_change_mrr, 0) as price_change_mrr
    from months
    inner join month_ends on month_ends.month_start = months.month_start
    cross join analytics.price_book as book
    left join movements on movements.month_start = months.month_start
),

final as (
    select
        month_start::date as month,
        mrr_start,
        case when is_priced then cast(new_mrr as double) end as new_mrr,
        case when is_priced then cast(expansion_mrr as double) end as expansion_mrr,
        case when is_priced then cast(contraction_mrr as double) end as contraction_mrr,
        case when is_priced then cast(churned_mrr as double) end as churned_mrr,
        case when is_priced then cast(reactivated_mrr as double) end as reactivated_mrr,
        case when is_priced then cast(price_change_mrr as double) end as price_change_mrr,
        case
            when is_priced
                then cast(
                    new_mrr + expansion_mrr - contraction_mrr - churned_mrr + reactivated_mrr
                    + price_change_mrr as double
                )
        end as net_change,
        mrr_end,
        is_complete,
        is_partial_start
    from measured
)

select * from final
order by month
