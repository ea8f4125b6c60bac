-- usable_over_time: live subscribers usable on each day since the first sync, by the status as
-- the API sent it: active, canceled but still in their paid period, other (a stacked area);
-- `estimated_usable`: the part of `usable` that rests on an estimated start (subscriptions a
-- sync had not seen yet, counted from their estimated first paid day: set apart on the chart).
-- Reads analytics.daily_subscribers, one row per day.
select day, usable, active, canceled_usable, other_usable, estimated_usable
from analytics.daily_subscribers
order by day
