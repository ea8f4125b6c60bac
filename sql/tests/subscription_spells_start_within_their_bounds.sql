-- subscription_spells_start_within_their_bounds: ties each start of use in
-- analytics.subscription_spells to the syncs around it (its bounds, analytics.as_of) and to the
-- subscription's other spells.
--
-- Expects: a start ('new', 'win_back') lies within its bounds, earliest_start <= spell_start <=
--   latest_start = seen_at; earliest_start is after the sync before seen_at that read the list
--   (previous_sync_at: not listed then), and not before the first sync: nothing is dated
--   before the history begins; the first sync's own subscriptions are not backdated; a
--   win-back starts after the previous spell of its subscription ended; a subscription's
--   spells never overlap.
-- Returns: the spells where that does not hold.

with spells as (
    select spells.*,
           lag(spells.spell_end) over (
               partition by spells.subscription_id order by spells.version_number nulls first
           ) as previous_end
    from analytics.subscription_spells as spells
)
select spells.subscription_id, spells.version_number, spells.start_kind, spells.spell_start,
       spells.earliest_start, spells.latest_start, spells.previous_end
from spells
cross join analytics.as_of as clock
where (spells.start_kind is not null and (
        spells.spell_start < spells.earliest_start
        or spells.spell_start > spells.latest_start
        or spells.latest_start <> spells.seen_at
        or spells.earliest_start < clock.first_sync_at
        or spells.earliest_start <= spells.previous_sync_at
    ))
   or (spells.start_kind is null and spells.spell_start <> spells.seen_at)
   or (spells.spell_start < clock.first_sync_at and spells.seen_at > clock.first_sync_at)
   or (spells.start_kind = 'win_back' and spells.spell_start <= spells.previous_end)
   or spells.spell_start < spells.previous_end
