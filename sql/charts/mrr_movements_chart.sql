-- mrr_movements: per month, the MRR it gained (new, expansion, reactivated) and lost
-- (contraction, churned), the price changes' effect and the net change (stacked bars up and
-- down, the net a line); start + movements = end.
-- Reads analytics.mrr_movements, one row per month, with the price book's currency. The
-- amounts are cast to double precision, as the rates of cohort_retention.sql, so both engines
-- give floats.
select movements.month,
    cast(movements.mrr_start as double precision) as mrr_start,
    cast(movements.new_mrr as double precision) as new_mrr,
    cast(movements.expansion_mrr as double precision) as expansion_mrr,
    cast(movements.contraction_mrr as double precision) as contraction_mrr,
    cast(movements.churned_mrr as double precision) as churned_mrr,
    cast(movements.reactivated_mrr as double precision) as reactivated_mrr,
    cast(movements.price_change_mrr as double precision) as price_change_mrr,
    cast(movements.net_change as double precision) as net_change,
    cast(movements.mrr_end as double precision) as mrr_end,
    movements.is_complete, movements.is_partial_start, book.currency
from analytics.mrr_movements as movements
cross join analytics.price_book as book
order by movements.month
