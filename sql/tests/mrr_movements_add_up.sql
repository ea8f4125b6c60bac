-- mrr_movements_add_up: ties each month of analytics.mrr_movements to its start and end, and
-- each month's start to the end of the month before (both from analytics.mrr_daily).
--
-- Expects (exactly, in decimal arithmetic to 6 decimals, the amounts' precision): mrr_start +
--   new + expansion - contraction - churned + reactivated + price_change = mrr_end, and =
--   mrr_start + net_change; every month after the first starts where the one before ended.
-- Returns: the months that do not add up.

with months as (
    select
        month,
        cast(mrr_start as decimal(18, 6)) as mrr_start,
        cast(new_mrr as decimal(18, 6)) as new_mrr,
        cast(expansion_mrr as decimal(18, 6)) as expansion_mrr,
        cast(contraction_mrr as decimal(18, 6)) as contraction_mrr,
        cast(churned_mrr as decimal(18, 6)) as churned_mrr,
        cast(reactivated_mrr as decimal(18, 6)) as reactivated_mrr,
        cast(price_change_mrr as decimal(18, 6)) as price_change_mrr,
        cast(net_change as decimal(18, 6)) as net_change,
        cast(mrr_end as decimal(18, 6)) as mrr_end,
        cast(lag(mrr_end) over (order by month nulls first) as decimal(18, 6)) as previous_end,
        row_number() over (order by month nulls first) as month_number
    from analytics.mrr_movements
)
select month, mrr_start, net_change, mrr_end, previous_end
from months
where mrr_start + new_mrr + expansion_mrr - contraction_mrr - churned_mrr + reactivated_mrr
        + price_change_mrr <> mrr_end
   or mrr_start + net_change <> mrr_end
   or (month_number > 1 and mrr_start is distinct from previous_end)
