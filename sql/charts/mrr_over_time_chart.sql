-- mrr_over_time: the monthly recurring revenue on each day since the first sync (an area from
-- zero, the first and last days labelled); NULL MRR: no prices set. `estimated_mrr`: the part
-- of `mrr` that rests on an estimated start (subscriptions a sync had not seen yet, counted
-- from their estimated first paid day: set apart on the chart).
-- Reads analytics.mrr_daily, one row per day. The amounts are cast to double precision, as the
-- rates of cohort_retention.sql, so both engines give floats.
select day, cast(mrr as double precision) as mrr, subscribers, paying_users,
    cast(arpu as double precision) as arpu, currency,
    cast(estimated_mrr as double precision) as estimated_mrr
from analytics.mrr_daily
order by day
