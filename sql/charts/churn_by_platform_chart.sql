-- churn_by_platform: the monthly churn rate by the subscriber's primary platform ('unknown'
-- without an account), one line per platform; months that began before the first sync
-- (`is_estimate`: their base is an estimate) are left out of the lines.
-- Reads analytics.churn_by_platform, one row per (month, platform). The rate is cast to double
-- precision, as in cohort_retention.sql, so both engines give floats.
select month, platform, subscribers_at_start, churned,
    cast(churn_rate as double precision) as churn_rate, is_estimate, is_complete
from analytics.churn_by_platform
order by month, platform
