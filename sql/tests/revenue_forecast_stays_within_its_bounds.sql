-- revenue_forecast_stays_within_its_bounds: ties analytics.revenue_forecast's expected MRR to
-- its interval and to MRR now (analytics.mrr_daily's last day), and the new MRR expected apart
-- to the rate it is drawn from.
--
-- Expects: mrr_not_due <= low <= expected <= high <= mrr_now = MRR now; coming_due and the
--   MRR falling due do not shrink as the horizon grows; expected renewals <= coming due; the
--   expected new MRR is new_mrr_last_30d x horizon_days / 30 (to the cent), at least 0, there
--   exactly when new_mrr_last_30d is, and not shrinking as the horizon grows; new_mrr_needs
--   says why only while it is not there for want of history.
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
        lag(mrr_not_due) over (order by horizon_days nulls first) as shorter_mrr_not_due,
        lag(expected_new_mrr) over (order by horizon_days nulls first) as shorter_new_mrr
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
   or horizons.expected_new_mrr < 0
   or (horizons.expected_new_mrr is null) <> (horizons.new_mrr_last_30d is null)
   or abs(horizons.expected_new_mrr - horizons.new_mrr_last_30d * horizons.horizon_days / 30)
      > 0.01
   or horizons.expected_new_mrr < horizons.shorter_new_mrr
   or (horizons.new_mrr_needs is not null and horizons.new_mrr_last_30d is not null)
