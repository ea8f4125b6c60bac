-- price_timeline: each billing period's monthly-normalised price over all time, without gaps.
--
-- Grain: one row per (period, starts_at) for `period` in monthly, yearly, unknown: consecutive
-- stretches [starts_at, ends_at) covering all time (`starts_at` NULL: since always; `ends_at`
-- NULL: open), cut at every `valid_from` and `valid_to` of the seed analytics.prices
-- (`[analytics]`'s price book, devportal.prices).
-- `mrr_amount`: the monthly-normalised price after the revenue share (prices.mrr_amount,
--   decimal(18, 6)) of the price row valid then; NULL where no row is (no prices set at all, or
--   before a period's first `valid_from`, or between a `valid_to` and the next row): the money
--   figures of those times are NULL, not a guess.
-- Day to instant: a price valid from day D applies from just after D's first instant
--   (D 00:00:00 + 1 microsecond), so the snapshot at D's midnight, which closes day D - 1 in
--   mrr_daily (as in daily_subscribers), still has day D - 1's price, and every snapshot within
--   day D has D's.
-- `valid_from`: the price row's own `valid_from` (NULL for the flat keys and for gaps).
--
-- @test unique(period, starts_at)
-- @test not_null(period)
-- @test accepted_values(period: monthly, yearly, unknown)

with periods as (
    select 'monthly' as period
    union all
    select 'yearly' as period
    union all
    select 'unknown' as period
),

cuts as (
    select
        period,
        valid_from as cut_day
    from analytics.prices
    where valid_from is not null
    union
    select
        period,
        valid_to as cut_day
    from analytics.prices
    where valid_to is not null
),

stretches as (
    -- from each cut to the next, and from always to the first cut (to no end without cuts)
    select
        period,
        cut_day as starts_day,
        lead(cut_day) over (partition by period order by cut_day nulls first) as ends_day
    from cuts
    union all
    select
        periods.period,
        null as starts_day,
        min(cuts.cut_day) as ends_day
    from periods
    left join cuts on cuts.period = periods.period
    group by periods.period
),

final as (
    select
        stretches.period,
        stretches.starts_day::timestamp + interval 1 microsecond as starts_at,
        stretches.ends_day::timestamp + interval 1 microsecond as ends_at,
        prices.valid_from,
        prices.mrr_amount
    from stretches
    left join analytics.prices as prices
        on prices.period = stretches.period
        and (
            prices.valid_from is null
            or (stretches.starts_day is not null and prices.valid_from <= stretches.starts_day)
        )
        and (
            prices.valid_to is null
            or (stretches.starts_day is not null and prices.valid_to > stretches.starts_day)
        )
)

select * from final
order by period, starts_at nulls first
