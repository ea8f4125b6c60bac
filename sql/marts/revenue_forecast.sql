-- revenue_forecast: a simple forecast of the next 30, 60 and 90 days after as_of: what comes
-- due, how much of it is expected to renew, and the MRR expected at the horizon's end.
--
-- Grain: one row per horizon (`horizon_days`: 30, 60, 90). Every row is a forecast
-- (`is_forecast`), from the history up to as_of; nothing here was observed.
-- Who: the live subscriptions usable at as_of (mrr_spells covering as_of: they make
--   mrr_daily's last MRR, `mrr_now`), each with its billing period then and its amount.
-- `coming_due`: those with a due date within the horizon, (as_of, as_of + horizon_days days]:
--   their `expires_at`, then one period later each ('unknown' is stepped monthly, as it is
--   priced), whatever their status now (see the rates).
-- The renewal rate of a period (`renewal_rate_monthly`, `_yearly`, `_unknown`): of the due dates
--   decided (renewed or churned) in monthly_renewals' months after the first sync (not
--   `is_estimate`), pooled over those months, the share renewed, for the subscriptions of that
--   period (billing_periods); 'unknown', and a period with nothing decided yet, take the rate
--   of all periods: 'unknown' holds by construction the subscriptions that never renewed while
--   watched (a renewal makes a period known), so its own rate is near 0 and no forecast of a
--   first renewal. The rate was measured over every due date, canceled subscriptions' among
--   them (they are its churn), so it is applied to every subscription coming due whatever its
--   status now; applying it to the active ones only would count those cancellations twice.
-- `expected_renewals`: the coming-due subscriptions expected still subscribed at the horizon's
--   end: the sum of rate^n, n = its due dates within the horizon (each renewal independent,
--   rate^n rounded to 6 decimals).
-- `expected_mrr`: `mrr_not_due` (the MRR of the usable subscriptions with nothing due within
--   the horizon, which stay) + the sum over the coming-due of amount x rate^n, at today's
--   amounts (a price change ahead in a prices_file is not applied). New subscriptions are not
--   forecast: this is where today's subscribers' MRR is expected to be, a floor for growth.
-- `expected_mrr_low`, `expected_mrr_high`: expected_mrr -/+ 1.96 standard deviations of that
--   sum (independent renewals, the rates taken as known: variance = sum of amount^2 x q x
--   (1 - q), q = rate^n), kept within what can happen (at least mrr_not_due, at most mrr_now).
--   A simple interval: the rates' own uncertainty is not in it.
-- `is_measurable`: a renewal or churn has been decided after the first sync; until then
--   `needs` says what history is missing and the expected figures are NULL (not 0).
-- Money columns are NULL without prices (or when a subscription counted has no price).
--
-- @test unique(horizon_days)
-- @test not_null(horizon_days, coming_due, is_measurable, is_forecast)

with clock as (
    select as_of
    from analytics.as_of
),

horizons as (
    select 30 as horizon_days
    union all
    select 60 as horizon_days
    union all
    select 90 as horizon_days
),

decided as (
    select
        period,
        sum(renewed) as renewed,
        sum(renewed + churned) as decided
    from analytics.monthly_renewals
    where not is_estimate
    group by period
),

rates as (
    select
        max(case when period = 'all' and decided > 0 then renewed / decided end) as rate_all,
        max(case when period = 'monthly' and decided > 0 then renewed / decided end)
            as rate_monthly,
        max(case when period = 'yearly' and decided > 0 then renewed / decided end)
            as rate_yearly
    from decided
),

period_rates as (
    select
        cast(coalesce(rates.rate_monthly, rates.rate_all) as double) as renewal_rate_monthly,
        cast(coalesce(rates.rate_yearly, rates.rate_all) as double) as renewal_rate_yearly,
        cast(rates.rate_all as double) as renewal_rate_unknown
    from rates
),

current_subscriptions as (
    select
        spells.subscription_id,
        spells.period,
        spells.mrr_amount,
        current.expires_at,
        case
            when spells.period = 'monthly' then period_rates.renewal_rate_monthly
            when spells.period = 'yearly' then period_rates.renewal_rate_yearly
            else period_rates.renewal_rate_unknown
        end as renewal_rate
    from analytics.mrr_spells as spells
    cross join clock
    cross join period_rates
    inner join analytics.subscriptions_current as current
        on current.id = spells.subscription_id
        and not current.is_test
    where spells.spell_start <= clock.as_of and spells.spell_end > clock.as_of
),

due_counts as (
    -- a subscription's due dates within a horizon: its `expires_at`, then (unless yearly) one
    -- month later, up to three times; each falls after the one before, so a date within the
    -- horizon is counted only while every earlier one is
    select
        horizons.horizon_days,
        subs.mrr_amount,
        subs.renewal_rate,
        case
            when subs.expires_at <= clock.as_of + horizons.horizon_days * interval 1 day
                then 1
            else 0
        end
        + case
            when
                subs.period <> 'yearly'
                and subs.expires_at + interval 1 month
                <= clock.as_of + horizons.horizon_days * interval 1 day
                then 1
            else 0
        end
        + case
            when
                subs.period <> 'yearly'
                and subs.expires_at + interval 2 month
                <= clock.as_of + horizons.horizon_days * interval 1 day
                then 1
            else 0
        end
        + case
            when
                subs.period <> 'yearly'
                and subs.expires_at + interval 3 month
                <= clock.as_of + horizons.horizon_days * interval 1 day
                then 1
            else 0
        end as due_dates
    from current_subscriptions as subs
    cross join horizons
    cross join clock
),

outcomes as (
    select
        horizon_days,
        mrr_amount,
        due_dates > 0 as is_coming_due,
        case
            when due_dates > 0 then cast(power(renewal_rate, due_dates) as decimal(18, 6))
        end as still_renewed
    from due_counts
),

sums as (
    select
        horizons.horizon_days,
        count(outcomes.horizon_days) filter (where outcomes.is_coming_due) as coming_due,
        count(outcomes.horizon_days) filter (where outcomes.mrr_amount is null) as unpriced,
        coalesce(sum(outcomes.mrr_amount), 0) as mrr_now,
        coalesce(sum(outcomes.mrr_amount) filter (where not outcomes.is_coming_due), 0)
            as mrr_not_due,
        coalesce(sum(outcomes.still_renewed), 0) as expected_renewals,
        coalesce(sum(outcomes.mrr_amount * outcomes.still_renewed), 0) as expected_due_mrr,
        coalesce(
            sum(
                cast(outcomes.mrr_amount as double) * cast(outcomes.mrr_amount as double)
                * cast(outcomes.still_renewed as double)
                * (1 - cast(outcomes.still_renewed as double))
            ),
            0
        ) as variance
    from horizons
    left join outcomes on outcomes.horizon_days = horizons.horizon_days
    group by horizons.horizon_days
),

forecasts as (
    select
        sums.*,
        period_rates.*,
        period_rates.renewal_rate_unknown is not null as is_measurable,
        book.has_prices and sums.unpriced = 0 as has_money,
        cast(sums.mrr_not_due + sums.expected_due_mrr as double) as expected_mrr_exact,
        1.96 * sqrt(sums.variance) as margin
    from sums
    cross join period_rates
    cross join analytics.price_book as book
),

final as (
    select
        horizon_days,
        true as is_forecast,
        cast(coming_due as bigint) as coming_due,
        case
            when is_measurable then cast(cast(expected_renewals as decimal(18, 6)) as double)
        end as expected_renewals,
        case when has_money then cast(mrr_now as double) end as mrr_now,
        case when has_money then cast(mrr_not_due as double) end as mrr_not_due,
        case
            when is_measurable and has_money
                then cast(cast(expected_mrr_exact as decimal(18, 6)) as double)
        end as expected_mrr,
        case
            when is_measurable and has_money
                then cast(
                    cast(
                        greatest(cast(mrr_not_due as double), expected_mrr_exact - margin)
                        as decimal(18, 6)
                    ) as double
                )
        end as expected_mrr_low,
        case
            when is_measurable and has_money
                then cast(
                    cast(least(cast(mrr_now as double), expected_mrr_exact + margin)
                        as decimal(18, 6)) as double
                )
        end as expected_mrr_high,
        renewal_rate_monthly,
        renewal_rate_yearly,
        renewal_rate_unknown,
        is_measurable,
        case
            when not is_measurable
                then 'a renewal or churn decided after the first sync (the sync after a '
                || 'subscription comes due tells)'
        end as needs
    from forecasts
)

select * from final
order by horizon_days
