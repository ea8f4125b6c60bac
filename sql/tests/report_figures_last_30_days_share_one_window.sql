-- report_figures_last_30_days_share_one_window: ties the "last 30 days" figures of
-- analytics.report_figures to one window, the same for each, recounted from
-- analytics.subscription_events.
--
-- Expects: window_days is the span from the later of as_of - 30 days and the first sync to
--   as_of (to 0.01 day): 30 once 30 days have been watched, never more; new_30d, canceled_30d
--   and churned_30d are the new, canceled and expired events after that start, up to as_of
--   (none of the first sync's backfill: the window starts at the first sync at the earliest).
-- Returns: the figures and the recount when they differ.

with clock as (
    select
        as_of,
        greatest(as_of - interval 30 day, first_sync_at) as window_start,
        least(date_diff('second', first_sync_at, as_of), 30 * 86400) as window_seconds
    from analytics.as_of
),
recount as (
    select
        count(*) filter (where events.event_type = 'new') as new_events,
        count(*) filter (where events.event_type = 'canceled') as canceled_events,
        count(*) filter (where events.event_type = 'expired') as expired_events,
        count(*) filter (where events.is_initial_load) as backfill_events
    from analytics.subscription_events as events
    cross join clock
    where events.event_at > clock.window_start and events.event_at <= clock.as_of
)
select figures.window_days, figures.new_30d, figures.canceled_30d, figures.churned_30d,
       recount.new_events, recount.canceled_events, recount.expired_events
from analytics.report_figures as figures
cross join clock
cross join recount
where figures.window_days > 30
   or abs(figures.window_days * 86400 - clock.window_seconds) > 0.01 * 86400
   or figures.new_30d <> recount.new_events
   or figures.canceled_30d <> recount.canceled_events
   or figures.churned_30d <> recount.expired_events
   or recount.backfill_events > 0
