-- as_of_has_exactly_one_row: ties analytics.as_of to its grain.
--
-- Expects: exactly one row (every metric is relative to that one time).
-- Returns: the row count when it is not 1.

select count(*) as row_count from analytics.as_of having count(*) <> 1
