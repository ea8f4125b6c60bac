-- report_figures_add_up: ties the totals of analytics.report_figures to their parts.
--
-- Expects: usable = active + canceled + other; each expiring window (7 and 30 days) = renewing +
--   churning + other.
-- Returns: the figures when a total does not add up.

select usable_subscribers, usable_active, usable_canceled, usable_other,
       expiring_7d, expiring_30d
from analytics.report_figures
where usable_subscribers <> usable_active + usable_canceled + usable_other
   or expiring_7d <> expiring_7d_renewing + expiring_7d_churning + expiring_7d_other
   or expiring_30d <> expiring_30d_renewing + expiring_30d_churning + expiring_30d_other
