-- cohort_retention: the heat map of each cohort (the month its subscriptions started, as the
-- syncs revealed it: analytics.cohort_retention) by month since: the share of it still usable
-- at that month's end; and, apart from it, the subscriptions already there at the first sync
-- (`is_backfill`), by calendar month.
-- Reads analytics.cohort_retention, one row per (cohort, month_offset). The first sync's
-- cohort holds every subscription it listed, expired ones too, which started at unknown times
-- before it: its month 0 is no retention. Its rows are measured here on its `base` instead:
-- those usable at the first sync (`first_sync_at`), and `usable` those of them still usable at
-- the month's end (the same test as the model's: within one of its subscription_spells, so
-- not during a lapse). Other cohorts' `base` is their size. The rate is cast to double precision:
-- PostgreSQL's numeric would come back as Decimal, an exact 1 of it as int, and a column of
-- ints and floats is not DuckDB's float column.
with already_there as (
    select current_subscriptions.id
    from analytics.subscriptions_current as current_subscriptions
    cross join analytics.as_of as clock
    inner join analytics.subscription_spells as spells
        on spells.subscription_id = current_subscriptions.id
        and spells.spell_start <= clock.first_sync_at
        and spells.spell_end > clock.first_sync_at
    where
        not current_subscriptions.is_test
        and current_subscriptions.first_seen_at <= clock.first_sync_at
),

still_there as (
    select retention.month_offset, count(*) as usable
    from analytics.cohort_retention as retention
    cross join already_there
    inner join analytics.subscription_spells as spells
        on spells.subscription_id = already_there.id
        and spells.spell_start <= retention.measured_at
        and spells.spell_end > retention.measured_at
    where retention.is_backfill
    group by retention.month_offset
),

base as (
    select count(*) as subscriptions from already_there
)

select retention.cohort, retention.cohort_month, retention.is_backfill, retention.month_offset,
    retention.month, retention.cohort_size,
    case when retention.is_backfill then base.subscriptions else retention.cohort_size end
        as base,
    case
        when retention.is_backfill then coalesce(still_there.usable, 0)
        else retention.usable
    end as usable,
    cast(case
        when not retention.is_backfill then retention.retention
        when base.subscriptions > 0
            then coalesce(still_there.usable, 0) * 1.0 / base.subscriptions
    end as double precision) as retention,
    retention.is_complete, clock.first_sync_at
from analytics.cohort_retention as retention
cross join base
cross join analytics.as_of as clock
left join still_there
    on retention.is_backfill and still_there.month_offset = retention.month_offset
order by retention.is_backfill desc, retention.cohort_month, retention.month_offset
