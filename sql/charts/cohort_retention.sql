-- cohort_retention: the heat map of each cohort (month first seen; the first sync's backfill
-- apart) by month since: the share of it still usable at that month's end.
-- Reads analytics.cohort_retention, one row per (cohort, month_offset). The rate is cast to
-- double precision: PostgreSQL's numeric would come back as Decimal, an exact 1 of it as int,
-- and a column of ints and floats is not DuckDB's float column.
select cohort, cohort_month, is_backfill, month_offset, month, cohort_size, usable,
    cast(retention as double precision) as retention, is_complete
from analytics.cohort_retention
order by is_backfill desc, cohort_month, month_offset
