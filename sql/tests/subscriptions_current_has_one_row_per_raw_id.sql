-- subscriptions_current_has_one_row_per_raw_id: ties analytics.subscriptions_current to the raw
-- history, devportal.subscriptions as staged (analytics.stg_subscriptions: every raw row, or the
-- empty stand-in while the API has listed none).
--
-- Expects: one current row per distinct raw (id, is_test) recorded up to as_of, and none the raw
--   history lacks.
-- Returns: each subscription only one side has (`only_in_model`: true when only the model has it).

with raw_ids as (
    select distinct raw.id, raw.is_test
    from analytics.stg_subscriptions as raw
    cross join analytics.as_of as clock
    where raw.valid_from <= clock.as_of
)
select coalesce(raw_ids.id, current_rows.id) as id,
       raw_ids.id is null as only_in_model
from raw_ids
full outer join analytics.subscriptions_current as current_rows using (id, is_test)
where raw_ids.id is null or current_rows.id is null
