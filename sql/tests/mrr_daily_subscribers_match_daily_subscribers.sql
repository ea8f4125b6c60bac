-- mrr_daily_subscribers_match_daily_subscribers: ties analytics.mrr_daily's subscribers to
-- analytics.daily_subscribers, day by day.
--
-- Expects: the same days, and on each the subscriptions MRR counts are the usable ones
--   (a canceled subscription counts until its expires_at in both).
-- Returns: the days where they differ, or that only one of them has.

select coalesce(mrr.day, subscribers.day) as day, mrr.subscribers, subscribers.usable
from analytics.mrr_daily as mrr
full outer join analytics.daily_subscribers as subscribers on subscribers.day = mrr.day
where mrr.subscribers is distinct from subscribers.usable
