-- mrr_daily_last_day_matches_report_figures: ties the last day of analytics.mrr_daily to the
-- report's MRR figures (analytics.report_figures).
--
-- Expects: report_figures.mrr and arpu are the last day's (both NULL without prices), and arr
--   is 12 x mrr.
-- Returns: the two rows' figures when they differ.

with last_day as (
    select mrr, arpu
    from analytics.mrr_daily
    order by day desc
    limit 1
)
select last_day.mrr, last_day.arpu, figures.mrr as report_mrr, figures.arpu as report_arpu,
       figures.arr as report_arr
from last_day
cross join analytics.report_figures as figures
where last_day.mrr is distinct from figures.mrr
   or last_day.arpu is distinct from figures.arpu
   or figures.arr is distinct from 12 * figures.mrr
