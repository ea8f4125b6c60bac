-- daily_subscribers_estimated_usable_within_usable: ties analytics.daily_subscribers'
-- estimated_usable to its usable, to analytics.mrr_daily's estimated_mrr and to
-- analytics.subscription_spells.
--
-- Expects: on every day 0 <= estimated_usable <= usable; on the last day (as_of) it is 0 (every
--   subscription counted now was seen by a sync); estimated_mrr is NULL exactly when mrr is,
--   0 <= estimated_mrr <= mrr, 0 on the last day and 0 wherever estimated_usable is.
-- Returns: the days where that does not hold.

with days as (
    select subscribers.day, subscribers.usable, subscribers.estimated_usable,
           mrr.mrr, mrr.estimated_mrr,
           subscribers.day = max(subscribers.day) over () as is_last_day
    from analytics.daily_subscribers as subscribers
    inner join analytics.mrr_daily as mrr on mrr.day = subscribers.day
)
select day, usable, estimated_usable, mrr, estimated_mrr
from days
where estimated_usable < 0
   or estimated_usable > usable
   or (is_last_day and estimated_usable <> 0)
   or (mrr is null) <> (estimated_mrr is null)
   or estimated_mrr < -0.000001
   or estimated_mrr > mrr + 0.000001
   or (is_last_day and abs(estimated_mrr) > 0.000001)
   or (estimated_usable = 0 and abs(estimated_mrr) > 0.000001)
