-- expiry_calendar: live usable subscriptions expiring on each of the next 60 days after as_of,
-- by treatment: active (renews), canceled (churns), other (neither); stacked bars per day.
-- One row per (day, status). The 60 days are charts.EXPIRY_DAYS, the width of the chart's axis.
select
    cast(current_subscriptions.expires_at as date) as day,
    current_subscriptions.status,
    count(*) as subscriptions
from analytics.subscriptions_current as current_subscriptions
cross join analytics.as_of as clock
where
    not current_subscriptions.is_test
    and current_subscriptions.is_usable
    and current_subscriptions.expires_at <= clock.as_of + interval '60 days'
group by cast(current_subscriptions.expires_at as date), current_subscriptions.status
order by day, current_subscriptions.status
