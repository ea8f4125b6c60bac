-- mrr_now_is_the_sum_of_subscription_prices: ties MRR now (the last day of analytics.mrr_daily)
-- to the subscriptions usable now (analytics.subscriptions_current), each at the price book's
-- price (analytics.prices) for the billing period of its paid period at as_of
-- (analytics.billing_segments), computed here without mrr_spells or price_timeline.
--
-- Expects: MRR now = the sum of those prices' monthly-normalised amounts (`mrr_amount`), for
--   the price valid on as_of's mrr_daily day (a day closed by a sync at midnight is the day
--   before); NULL when there are no prices or a usable subscription has none.
-- Returns: both figures when they differ.

with clock as (
    select as_of, (as_of - interval 1 microsecond)::date as as_of_day
    from analytics.as_of
),
usable_now as (
    -- each with the paid period covering as_of (segments do not overlap: one at most)
    select current.id, segments.period
    from analytics.subscriptions_current as current
    cross join clock
    inner join analytics.billing_segments as segments
        on segments.subscription_id = current.id
        and (segments.segment_start is null or segments.segment_start <= clock.as_of)
        and segments.segment_end > clock.as_of
    where current.is_usable and not current.is_test
),
priced as (
    select usable_now.id, prices.mrr_amount
    from usable_now
    cross join clock
    left join analytics.prices as prices
        on prices.period = usable_now.period
        and (prices.valid_from is null or prices.valid_from <= clock.as_of_day)
        and (prices.valid_to is null or prices.valid_to > clock.as_of_day)
),
expected as (
    select case
        when (select has_prices from analytics.price_book)
            and count(*) filter (where mrr_amount is null) = 0
            then cast(coalesce(sum(mrr_amount), 0) as double)
    end as mrr
    from priced
),
last_day as (
    select mrr
    from analytics.mrr_daily
    order by day desc
    limit 1
)
select last_day.mrr, expected.mrr as sum_of_prices
from last_day
cross join expected
where last_day.mrr is distinct from expected.mrr
