-- report_figures_forecast_is_revenue_forecasts: ties the report's 30-day forecast figures to
-- analytics.revenue_forecast's 30-day horizon.
--
-- Expects: forecast_30d_mrr, _low, _high and forecast_30d_new_mrr are that row's expected_mrr,
--   expected_mrr_low, expected_mrr_high and expected_new_mrr (all NULL together where it is),
--   and low <= forecast <= high.
-- Returns: the figures when they differ.

select figures.forecast_30d_mrr, figures.forecast_30d_mrr_low, figures.forecast_30d_mrr_high,
       figures.forecast_30d_new_mrr
from analytics.report_figures as figures
left join analytics.revenue_forecast as forecast on forecast.horizon_days = 30
where figures.forecast_30d_mrr is distinct from forecast.expected_mrr
   or figures.forecast_30d_mrr_low is distinct from forecast.expected_mrr_low
   or figures.forecast_30d_mrr_high is distinct from forecast.expected_mrr_high
   or figures.forecast_30d_new_mrr is distinct from forecast.expected_new_mrr
   or figures.forecast_30d_mrr_low > figures.forecast_30d_mrr
   or figures.forecast_30d_mrr > figures.forecast_30d_mrr_high
