-- monthly_renewals_periods_add_up_to_all: ties the rows of analytics.monthly_renewals by billing
-- period to its `all` rows.
--
-- Expects: every month has an `all` row and rows by period, and each of came_due, renewed, churned
--   and undecided of the `all` row is the sum over the periods.
-- Returns: the months where that does not hold.

with every_period as (
    select month, came_due, renewed, churned, undecided
    from analytics.monthly_renewals where period = 'all'
),
by_period as (
    select month,
           sum(came_due) as came_due, sum(renewed) as renewed,
           sum(churned) as churned, sum(undecided) as undecided
    from analytics.monthly_renewals where period <> 'all'
    group by month
)
select coalesce(every_period.month, by_period.month) as month
from every_period
full outer join by_period on by_period.month = every_period.month
where every_period.month is null or by_period.month is null
   or every_period.came_due <> by_period.came_due
   or every_period.renewed <> by_period.renewed
   or every_period.churned <> by_period.churned
   or every_period.undecided <> by_period.undecided
