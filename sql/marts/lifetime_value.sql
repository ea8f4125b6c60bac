-- lifetime_value: what a paying user is worth over their lifetime (LTV), and how it was
-- estimated.
--
-- Grain: exactly one row, as of as_of.
-- `arpu`: mrr_daily's last day (MRR now / paying users now).
-- `churn_rate`: the monthly churn rate pooled over the complete months after the first sync
--   (monthly_churn with `is_complete` and not `is_estimate`): their churned / their
--   subscribers at start; `churn_months`: how many months that is. NULL without such a month.
-- `survival_area_days`: the area under the Kaplan-Meier curve (survival_curve) up to its last
--   day: the mean days a followed subscription lasted within the days observed (each
--   survival, kept to 6 decimals, times the days until the next row); `survival_last_day`,
--   `survival_min`: how far the curve reaches. NULL without a curve.
-- `ltv_method`, `lifetime_months`, `ltv`: which estimate is shown:
--   'survival' when the curve has fallen to 0.1 or below (at most a tenth of the followed
--     subscriptions outlive its last day, so the area misses little): lifetime_months =
--     survival_area_days / 30.4375 (days in an average month), ltv = arpu x lifetime_months;
--     still a lower bound: the tail beyond the last day is not counted;
--   else 'churn_rate' when churn_rate > 0: ltv = arpu / churn_rate (the classic formula),
--     lifetime_months = 1 / churn_rate (the mean lifetime under a constant monthly churn);
--   else NULL (not measurable yet: `needs` says what history is missing), and NULL without
--   prices (arpu NULL).
-- The rate counts subscriptions, the ARPU users: a user with two subscriptions is worth their
--   sum while either lasts; the API has no customer above the subscription.
--
-- @test not_null(churn_months)

with last_day as (
    select arpu
    from analytics.mrr_daily
    order by day desc
    limit 1
),

churn as (
    select
        count(*) as churn_months,
        cast(sum(churned) as double) / nullif(cast(sum(subscribers_at_start) as double), 0)
            as churn_rate
    from analytics.monthly_churn
    where is_complete and not is_estimate
),

curve_steps as (
    select
        day,
        survival,
        lead(day) over (order by day nulls first) as next_day
    from analytics.survival_curve
),

curve as (
    select
        sum(
            cast(survival as decimal(18, 6)) * (next_day - day)
        ) filter (where next_day is not null) as area,
        max(day) as survival_last_day,
        min(survival) as survival_min
    from curve_steps
),

measured as (
    select
        last_day.arpu,
        churn.churn_rate,
        churn.churn_months,
        case
            when curve.survival_last_day is not null then cast(coalesce(curve.area, 0) as double)
        end as survival_area_days,
        curve.survival_last_day,
        curve.survival_min,
        case
            when curve.survival_min <= 0.1 then 'survival'
            when churn.churn_rate > 0 then 'churn_rate'
        end as method
    from churn
    cross join curve
    left join last_day on true
),

final as (
    select
        arpu,
        churn_rate,
        churn_months,
        survival_area_days,
        survival_last_day,
        survival_min,
        case when arpu is not null then method end as ltv_method,
        case
            when method = 'survival' then survival_area_days / 30.4375
            when method = 'churn_rate' then 1 / churn_rate
        end as lifetime_months,
        case
            when arpu is not null and method = 'survival'
                then arpu * (survival_area_days / 30.4375)
            when arpu is not null and method = 'churn_rate' then arpu / churn_rate
        end as ltv,
        case
            when method is null
                then 'a churn in a complete month after the first sync, or a survival curve '
                || 'that falls to 10%'
            when arpu is null then 'prices: set [analytics] price_monthly, price_yearly '
                || 'and currency'
        end as needs
    from measured
)

select * from final
