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
-- What expected_mrr leaves out: new sales (subscriptions that start after as_of) and win-backs.
--   Read alone, it falls below MRR now by the renewals expected to lapse; the report prints it
--   as the MRR of today's subscriptions in 30 days, beside the new MRR expected apart:
-- `new_mrr_last_30d`: the MRR the subscriptions new in the last 30 days, (as_of - 30 days,
--   as_of], added when they started (mrr_changes' `new` movements after the first sync, at
--   their first amount): the observed rate of acquisition. NULL until 30 days have been
--   watched after the first sync (as_of - 30 days >= first_sync_at: a shorter span would be
--   extrapolated from a few days), without prices, or when one of them has no price.
-- `expected_new_mrr`: new_mrr_last_30d x horizon_days / 30: the MRR expected to be added by
--   new subscriptions within the horizon at that rate, a separate part, not in expected_mrr
--   (as added: their own renewals and churn within the horizon are not applied, nothing for
--   30 days, as a month's subscription comes due after a month).
-- `new_mrr_needs`: while new_mrr_last_30d is NULL with prices set, what history is missing.
-- `is_measurable`: a renewal or churn has been decided after the first sync; until then
--   `needs` says what history is missing and the expected figures are NULL (not 0).
-- Money columns are NULL without prices (or when a subscription counted has no price).
--
-- @test unique(horizon_days)
-- @test not_null(horizon_days, coming_due, is_measurable, is_forecast)

with clock as (
    select
        as_of,
        first_sync_at
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

due_instants as materialized (
    -- a subscription's due dates: its `expires_at`, then (unless yearly) one month later, up to
    -- three times, each computed once (the horizons compare them; materialized, or PostgreSQL
    -- computes them again for every horizon)
    select
        subs.mrr_amount,
        subs.renewal_rate,
        subs.expires_at as first_due,
        case when subs.period <> 'yearly' then subs.expires_at + interval 1 month end
            as second_due,
        case when subs.period <> 'yearly' then subs.expires_at + interval 2 month end
            as third_due,
        case when subs.period <> 'yearly' then subs.expires_at + interval 3 month end
            as fourth_due
    from current_subscriptions as subs
),

horizon_ends as (
    -- the three horizons' ends, in one row
    select
        clock.as_of + 30 * interval 1 day as end_30,
        clock.as_of + 60 * interval 1 day as end_60,
        clock.as_of + 90 * interval 1 day as end_90
    from clock
),

due_counts as (
    -- its due dates within each horizon, in one pass: each falls after the one before, so a
    -- date within the horizon is counted only while every earlier one is
    select
        dues.mrr_amount,
        dues.renewal_rate,
        case when dues.first_due <= ends.end_30 then 1 else 0 end
        + case when dues.second_due <= ends.end_30 then 1 else 0 end
        + case when dues.third_due <= ends.end_30 then 1 else 0 end
        + case when dues.fourth_due <= ends.end_30 then 1 else 0 end as due_dates_30,
        case when dues.first_due <= ends.end_60 then 1 else 0 end
        + case when dues.second_due <= ends.end_60 then 1 else 0 end
        + case when dues.third_due <= ends.end_60 then 1 else 0 end
        + case when dues.fourth_due <= ends.end_60 then 1 else 0 end as due_dates_60,
        case when dues.first_due <= ends.end_90 then 1 else 0 end
        + case when dues.second_due <= ends.end_90 then 1 else 0 end
        + case when dues.third_due <= ends.end_90 then 1 else 0 end
        + case when dues.fourth_due <= ends.end_90 then 1 else 0 end as due_dates_90
    from due_instants as dues
    cross join horizon_ends as ends
),

due_combinations as (
    -- the subscriptions with the same renewal rate and numbers of due dates, grouped once
    -- (a few rows) before they are spread over the horizons; `mrr_squares` exact here
    select
        renewal_rate,
        due_dates_30,
        due_dates_60,
        due_dates_90,
        count(*) as subscriptions,
        count(*) filter (where mrr_amount is null) as unpriced,
        sum(mrr_amount) as mrr,
        sum(mrr_amount * mrr_amount) as mrr_squares
    from due_counts
    group by renewal_rate, due_dates_30, due_dates_60, due_dates_90
),

due_groups as (
    -- the subscriptions of a horizon with the same renewal rate and number of due dates share
    -- their chance to be still renewed at its end: grouped first, so it is computed per group
    -- (`mrr_squares`, for the variance, in double precision)
    select
        horizon_days,
        renewal_rate,
        due_dates,
        cast(sum(subscriptions) as bigint) as subscriptions,
        cast(sum(unpriced) as bigint) as unpriced,
        sum(mrr) as mrr,
        cast(sum(mrr_squares) as double) as mrr_squares
    from (
        -- each combination once per horizon, with that horizon's number of due dates
        select
            horizons.horizon_days,
            combinations.renewal_rate,
            case horizons.horizon_days
                when 30 then combinations.due_dates_30
                when 60 then combinations.due_dates_60
                else combinations.due_dates_90
            end as due_dates,
            combinations.subscriptions,
            combinations.unpriced,
            combinations.mrr,
            combinations.mrr_squares
        from due_combinations as combinations
        cross join horizons
    ) as by_horizon
    group by horizon_days, renewal_rate, due_dates
),

outcomes as (
    select
        horizon_days,
        subscriptions,
        unpriced,
        mrr,
        mrr_squares,
        due_dates > 0 as is_coming_due,
        case
            when due_dates > 0 then cast(power(renewal_rate, due_dates) as decimal(18, 6))
        end as still_renewed
    from due_groups
),

sums as (
    select
        horizons.horizon_days,
        coalesce(sum(outcomes.subscriptions) filter (where outcomes.is_coming_due), 0)
            as coming_due,
        coalesce(sum(outcomes.unpriced), 0) as unpriced,
        coalesce(sum(outcomes.mrr), 0) as mrr_now,
        coalesce(sum(outcomes.mrr) filter (where not outcomes.is_coming_due), 0) as mrr_not_due,
        coalesce(sum(outcomes.still_renewed * outcomes.subscriptions), 0) as expected_renewals,
        coalesce(
            sum(cast(outcomes.mrr as decimal(18, 6)) * outcomes.still_renewed), 0
        ) as expected_due_mrr,
        coalesce(
            sum(
                outcomes.mrr_squares
                * cast(outcomes.still_renewed as double)
                * (1 - cast(outcomes.still_renewed as double))
            ),
            0
        ) as variance
    from horizons
    left join outcomes on outcomes.horizon_days = horizons.horizon_days
    group by horizons.horizon_days
),

acquisition as (
    -- the new MRR of the last 30 days, once 30 days have been watched after the first sync
    select
        clock.as_of - interval 30 day >= clock.first_sync_at as is_watched,
        coalesce(sum(changes.amount_after), 0) as new_mrr,
        count(changes.subscription_id) filter (where not changes.is_priced) as unpriced
    from clock
    left join analytics.mrr_changes as changes
        on changes.movement = 'new'
        and changes.changed_at > clock.first_sync_at
        and changes.changed_at > clock.as_of - interval 30 day
        and changes.changed_at <= clock.as_of
    group by clock.as_of, clock.first_sync_at
),

forecasts as (
    select
        sums.*,
        period_rates.*,
        acquisition.is_watched as is_acquisition_watched,
        acquisition.new_mrr as new_mrr_exact,
        book.has_prices and acquisition.unpriced = 0 as has_new_money,
        period_rates.renewal_rate_unknown is not null as is_measurable,
        book.has_prices and sums.unpriced = 0 as has_money,
        cast(sums.mrr_not_due + sums.expected_due_mrr as double) as expected_mrr_exact,
        1.96 * sqrt(sums.variance) as margin
    from sums
    cross join period_rates
    cross join acquisition
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
        case
            when is_acquisition_watched and has_new_money
                then cast(cast(new_mrr_exact as decimal(18, 6)) as double)
        end as new_mrr_last_30d,
        case
            when is_acquisition_watched and has_new_money
                then cast(cast(new_mrr_exact * horizon_days / 30 as decimal(18, 6)) as double)
        end as expected_new_mrr,
        case
            when not is_acquisition_watched
                then '30 days watched after the first sync (new subscriptions are seen '
                || 'between two syncs; their rate is measured over the last 30 days)'
        end as new_mrr_needs,
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
