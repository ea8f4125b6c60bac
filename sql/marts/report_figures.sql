-- report_figures: the figures of `devportal report`, live subscriptions, relative to as_of.
--
-- Grain: exactly one row; one column per figure, named as the report's keys (JSON, CSV).
-- `as_of`: as in as_of (the latest successful sync, server clock).
-- `has_verified_sweep`, `last_verified_sweep_at`, `window_syncs_since_verified_sweep`,
--   `unverified_sweeps_since_verified_sweep`: as in as_of: what the subscription figures rest
--   on (the whole live list read and verified at that time, and the partial reads since; no
--   verified sweep: the figures cover only the subscriptions read so far).
-- `subscriptions_read`: live subscriptions the warehouse holds (every id ever read, usable or
--   not): without a verified sweep, all the figures count is these.
-- `usable_subscribers`: live subscriptions usable now (subscriptions_current.is_usable);
--   `usable_active` of them active, `usable_canceled` canceled but usable until `expires_at`,
--   `usable_other` of another status (one the spec does not show, or none), by the status as
--   the API sent it (`status_sent`), so that usable = active + canceled + other. The report
--   names each other status with its count and its treatment (`[analytics] status_map`: a
--   mapped status counts here as other all the same, and acts as its treatment in every other
--   figure). `usable_other` and the `_other` figures below are always here; the report shows
--   them (with its list `other_statuses`, from subscriptions_current) only when a live
--   subscription read has a status beyond active and canceled.
-- `usable_no_expiry`: of `usable_subscribers`, the lifetime plans (`expiry_kind` 'lifetime': the
--   API sent no expiry, null or no key): usable while listed, whatever their status, until a
--   later version gives an expiry or a sweep no longer lists them; never expiring soon, never
--   churn (only a removal ends them), no MRR (mrr_spells' period 'lifetime', 0).
-- `subscriptions_listed`: live subscriptions the latest sweep still listed (`subscriptions_read`
--   less the removed), = `usable_subscribers` + `listed_expired` (their `expires_at` passed) +
--   `expiry_unreadable` (what was sent is no date: a MySQL zero date, an empty string, text;
--   the raw text in subscriptions_current.expires_at_raw): listed, not counted as usable, not
--   churn (sql/tests/report_figures_listed_add_up). The report shows `usable_no_expiry` and
--   `expiry_unreadable` only when one of them is not 0; the others are JSON's always.
-- `last_full_month*`: the latest complete month of monthly_churn (`is_complete`): `month`,
--   `churned`, `subscribers_at_start`, `churn_rate` and `is_estimate` (its base is an estimate,
--   the month began before the first sync); all NULL while no month is complete yet.
-- `expiring_7d*`, `expiring_30d*`: rows of expiring_soon with `days_left` <= 7, and all of
--   them (<= 30): in total, `_renewing` (treated as active), `_churning` (treated as canceled,
--   `will_churn`) and `_other` (a status not mapped: neither), which add up to the total.
-- `window_days`: the span, in days (2 decimals), that the "last 30 days" figures count over:
--   (window start, as_of], the window start the later of as_of - 30 days and the first sync.
--   30 once 30 days have been watched after the first sync; until then the days watched (0
--   after a first sync alone). One window for all three figures below: a new subscription
--   and a cancellation are only seen between two syncs, so an expiry read from `expires_at`
--   before the first sync is left out too (never a short count beside a long one).
-- `new_30d`, `canceled_30d`: `new` / `canceled` events of subscription_events in that window
--   (a `new` at its estimated first paid instant, always after the first sync, as monthly_churn
--   and mrr_movements count it; a cancellation at the sync that saw it),
--   backfill of the first sync excluded (`is_initial_load`); `churned_30d`: the `expired`
--   events of the same window (as `churned` in monthly_churn).
-- `last_full_month_came_due`, `_renewed`, `_renewal_rate`: monthly_renewals of period 'all'
--   in its latest complete month (the month of `last_full_month`, as both end at the month of
--   as_of); NULL while it has no complete month (nothing came due before as_of's month).
-- `median_lifetime_days`: the first day of survival_curve whose survival is <= 0.5; NULL while
--   the curve has not reached one half (or there is no curve).
-- `top_churn_platform`, `top_churn_platform_churn_rate`: of churn_by_platform's latest
--   complete month, the platform with the highest churn rate among those with at least 20
--   subscribers at the month start (the minimum base: below it one subscriber moves the rate
--   by 5 points or more, and a young warehouse's "20.0%" of 8 reads as a finding); ties: the
--   first platform by name; all rates may be 0. Measured as the churn tile's rate is: NULL
--   while that month's base is an estimate (`is_estimate`: it began before the first sync)
--   or no month is complete, and NULL when no platform has the minimum base. `unknown` (no
--   account) is not a platform and is left out: churn_by_platform has its row.
-- Revenue (all NULL without prices: `[analytics]` price book, analytics.price_book):
-- `currency`, `revenue_basis`: the price book's ISO 4217 code and 'gross' (revenue_share 1) or
--   'net' (after the platform's cut).
-- `mrr`: MRR now, mrr_daily's last day (as_of); `arr`: 12 x mrr (the report shows 12 x the
--   mrr it shows, rounded to the currency's minor unit); `arpu`: mrr_daily's.
-- `mrr_month_before`: mrr_daily of the last day of the month before the month of as_of's
--   mrr_daily day (the tiles' change); NULL when that day is before the first sync's day.
-- `ltv`, `ltv_method` ('survival' or 'churn_rate'): lifetime_value's, which says which is
--   shown when.
-- `last_full_month_mrr_new`, `_churned` (positive), `_reactivated`, `_net_change`: of
--   mrr_movements' latest complete month; `last_full_month_mrr_is_partial`: that month is the
--   first one, whose movements start after the first sync's day (mrr_movements
--   .is_partial_start). NULL while no month is complete.
-- `forecast_30d_mrr`: revenue_forecast's expected MRR 30 days after as_of (NULL until it is
--   measurable): the renewals of today's subscriptions only, new sales left out;
--   `forecast_30d_mrr_low`, `_high`: its interval (revenue_forecast's expected_mrr_low, _high);
--   `forecast_30d_new_mrr`: the new MRR expected over those 30 days at the rate of the last 30
--   (revenue_forecast.expected_new_mrr), apart, not in forecast_30d_mrr; NULL until 30 days
--   have been watched.
--
-- @test unique(as_of)
-- @test not_null(usable_subscribers, usable_active, usable_canceled, usable_other)
-- @test not_null(subscriptions_read)
-- @test not_null(subscriptions_listed, listed_expired, usable_no_expiry, expiry_unreadable)
-- @test not_null(has_verified_sweep, window_syncs_since_verified_sweep)
-- @test not_null(unverified_sweeps_since_verified_sweep)
-- @test not_null(expiring_7d, expiring_7d_renewing, expiring_7d_churning, expiring_7d_other)
-- @test not_null(expiring_30d, expiring_30d_renewing, expiring_30d_churning, expiring_30d_other)
-- @test not_null(new_30d, canceled_30d, churned_30d, window_days)

with usable as (
    select
        count(*) filter (where is_usable) as usable_subscribers,
        count(*) filter (where is_usable and status_sent = 'active') as usable_active,
        count(*) filter (where is_usable and status_sent = 'canceled') as usable_canceled,
        count(*) filter (
            where is_usable and (status_sent is null or status_sent not in ('active', 'canceled'))
        ) as usable_other,
        count(*) filter (where is_usable and expiry_kind = 'lifetime') as usable_no_expiry,
        count(*) filter (where not is_removed) as subscriptions_listed,
        count(*) filter (
            where not is_removed and not is_usable and expiry_kind = 'date'
        ) as listed_expired,
        count(*) filter (
            where not is_removed and expiry_kind = 'unreadable'
        ) as expiry_unreadable,
        count(*) as subscriptions_read
    from analytics.subscriptions_current
    where not is_test
),

last_full_month as (
    select
        month as last_full_month,
        churned as last_full_month_churned,
        subscribers_at_start as last_full_month_subscribers_at_start,
        churn_rate as last_full_month_churn_rate,
        is_estimate as last_full_month_is_estimate
    from analytics.monthly_churn
    where is_complete
    order by month desc
    limit 1
),

expiring as (
    select
        count(*) filter (where days_left <= 7) as expiring_7d,
        count(*) filter (where days_left <= 7 and status = 'active') as expiring_7d_renewing,
        count(*) filter (where days_left <= 7 and will_churn) as expiring_7d_churning,
        count(*) filter (where days_left <= 7 and status = 'other') as expiring_7d_other,
        count(*) as expiring_30d,
        count(*) filter (where status = 'active') as expiring_30d_renewing,
        count(*) filter (where will_churn) as expiring_30d_churning,
        count(*) filter (where status = 'other') as expiring_30d_other
    from analytics.expiring_soon
),

last_full_month_renewals as (
    select
        came_due as last_full_month_came_due,
        renewed as last_full_month_renewed,
        renewal_rate as last_full_month_renewal_rate
    from analytics.monthly_renewals
    where is_complete and period = 'all'
    order by month desc
    limit 1
),

book as (
    select
        case when has_prices then currency end as currency,
        case when has_prices then basis end as revenue_basis
    from analytics.price_book
),

mrr_now as (
    select
        mrr,
        12 * mrr as arr,
        arpu
    from analytics.mrr_daily
    order by day desc
    limit 1
),

mrr_month_before as (
    select daily.mrr as mrr_month_before
    from analytics.mrr_daily as daily
    cross join analytics.as_of as clock
    where daily.day = cast(
        date_trunc('month', clock.as_of - interval 1 microsecond) - interval 1 day as date
    )
),

last_full_month_mrr as (
    select
        new_mrr as last_full_month_mrr_new,
        churned_mrr as last_full_month_mrr_churned,
        reactivated_mrr as last_full_month_mrr_reactivated,
        net_change as last_full_month_mrr_net_change,
        is_partial_start as last_full_month_mrr_is_partial
    from analytics.mrr_movements
    where is_complete
    order by month desc
    limit 1
),

forecast_30d as (
    select
        expected_mrr as forecast_30d_mrr,
        expected_mrr_low as forecast_30d_mrr_low,
        expected_mrr_high as forecast_30d_mrr_high,
        expected_new_mrr as forecast_30d_new_mrr
    from analytics.revenue_forecast
    where horizon_days = 30
),

median_lifetime as (
    select min(day) as median_lifetime_days
    from analytics.survival_curve
    where survival <= 0.5
),

top_churn_platform as (
    select
        platform as top_churn_platform,
        churn_rate as top_churn_platform_churn_rate
    from analytics.churn_by_platform
    where
        -- the minimum base (20, the header's), a measured month (not an estimate)
        subscribers_at_start >= 20
        and not is_estimate
        and platform <> 'unknown'
        and month = (select max(month) from analytics.churn_by_platform where is_complete)
    order by churn_rate desc, platform
    limit 1
),

last_30_days_window as (
    -- the last 30 days, or the part of them watched: from the first sync on
    select
        clock.as_of,
        greatest(clock.as_of - interval 30 day, clock.first_sync_at) as window_start
    from analytics.as_of as clock
),

last_30_days as (
    select
        round(
            cast(date_diff('second', win.window_start, win.as_of) / 86400.0 as decimal(18, 6)), 2
        ) as window_days,
        count(events.event_type) filter (
            where events.event_type = 'new' and not events.is_initial_load
        ) as new_30d,
        count(events.event_type) filter (
            where events.event_type = 'canceled' and not events.is_initial_load
        ) as canceled_30d,
        count(events.event_type) filter (where events.event_type = 'expired') as churned_30d
    from last_30_days_window as win
    left join analytics.subscription_events as events
        on events.event_at > win.window_start and events.event_at <= win.as_of
    group by win.window_start, win.as_of
),

final as (
    select
        clock.as_of,
        clock.has_verified_sweep,
        clock.last_verified_sweep_at,
        clock.window_syncs_since_verified_sweep,
        clock.unverified_sweeps_since_verified_sweep,
        usable.subscriptions_read,
        usable.usable_subscribers,
        usable.usable_active,
        usable.usable_canceled,
        usable.usable_other,
        usable.usable_no_expiry,
        usable.subscriptions_listed,
        usable.listed_expired,
        usable.expiry_unreadable,
        last_full_month.last_full_month,
        last_full_month.last_full_month_churned,
        last_full_month.last_full_month_subscribers_at_start,
        last_full_month.last_full_month_churn_rate,
        last_full_month.last_full_month_is_estimate,
        expiring.expiring_7d,
        expiring.expiring_7d_renewing,
        expiring.expiring_7d_churning,
        expiring.expiring_7d_other,
        expiring.expiring_30d,
        expiring.expiring_30d_renewing,
        expiring.expiring_30d_churning,
        expiring.expiring_30d_other,
        last_30_days.window_days,
        last_30_days.new_30d,
        last_30_days.canceled_30d,
        last_30_days.churned_30d,
        last_full_month_renewals.last_full_month_came_due,
        last_full_month_renewals.last_full_month_renewed,
        last_full_month_renewals.last_full_month_renewal_rate,
        median_lifetime.median_lifetime_days,
        top_churn_platform.top_churn_platform,
        top_churn_platform.top_churn_platform_churn_rate,
        book.currency,
        book.revenue_basis,
        mrr_now.mrr,
        mrr_now.arr,
        mrr_now.arpu,
        mrr_month_before.mrr_month_before,
        lifetime.ltv,
        lifetime.ltv_method,
        last_full_month_mrr.last_full_month_mrr_new,
        last_full_month_mrr.last_full_month_mrr_churned,
        last_full_month_mrr.last_full_month_mrr_reactivated,
        last_full_month_mrr.last_full_month_mrr_net_change,
        last_full_month_mrr.last_full_month_mrr_is_partial,
        forecast_30d.forecast_30d_mrr,
        forecast_30d.forecast_30d_mrr_low,
        forecast_30d.forecast_30d_mrr_high,
        forecast_30d.forecast_30d_new_mrr
    from analytics.as_of as clock
    cross join usable
    cross join expiring
    cross join last_30_days
    cross join median_lifetime
    left join last_full_month on true
    left join last_full_month_renewals on true
    left join top_churn_platform on true
    cross join book
    cross join analytics.lifetime_value as lifetime
    left join mrr_now on true
    left join mrr_month_before on true
    left join last_full_month_mrr on true
    left join forecast_30d on true
)

select * from final
