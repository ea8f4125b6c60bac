-- revenue_forecast_stays_within_its_bounds: ties analytics.revenue_forecast's expected MRR to
-- its interval and to MRR now (analytics.mrr_daily's last day).
--
-- Expects: mrr_not_due <= low <= expected <= high <= mrr_now = MRR now; coming_due and the
--   MRR falling due do not shrink as the horizon grows; expected renewals <= coming due.
-- Returns: the horizons that break this.

with last_day as (
    select mrr
    from analytics.mrr_daily
    order by day desc
    limit 1
),
horizons as (
    select
        forecast.*,
        lag(coming_due) over (order by horizon_days nulls first) as shorter_coming_due,
        lag(mrr_not_due) over (order by horizon_days nulls first) as shorter_mrr_not_due
    from analytics.revenue_forecast as forecast
)
select horizons.horizon_days, horizons.coming_due, horizons.expected_mrr
from horizons
cross join last_day
where horizons.mrr_not_due > horizons.expected_mrr_low
   or horizons.expected_mrr_low > horizons.expected_mrr
   or horizons.expected_mrr > horizons.expected_mrr_high
   or horizons.expected_mrr_high > horizons.mrr_now
   or horizons.mrr_now is distinct from last_day.mrr
   or horizons.coming_due < horizons.shorter_coming_due
   or horizons.mrr_not_due > horizons.shorter_mrr_not_due
   or horizons.expected_renewals > horizons.coming_due
