-- mrr_changes: every change of a live subscription's MRR, classified, up to as_of.
--
-- Grain: one row per (subscription_id, changed_at): each instant at which one of the
-- subscription's mrr_spells starts or ends (at most one of each: its spells do not overlap),
-- at or before as_of.
-- `amount_before` / `amount_after`: its monthly-normalised amount just before and from
--   `changed_at` (0 when it had no spell then: not usable); `period_before` / `period_after`:
--   the spells' billing periods (NULL without a spell). `is_priced`: every spell involved has a
--   price (amounts of spells without one are NULL, and so is every money figure they touch).
-- `day`: the mrr_daily day the change first shows in: the day of the first snapshot at or
--   after it (a change at exactly midnight closes the day before), the first sync's day for
--   anything before; `is_base`: on that first day, so part of the MRR the history starts with,
--   not a movement.
-- `movement` (the published MRR convention: dbt's mrr-playbook, ChartMogul; mrr_movements
--   says where devportal differs):
--   'new': a spell starts, none ended here, and it is no win-back: a subscription's first use
--     (one first seen by a later sync than the first starts at its estimated first paid
--     instant, subscription_spells), or a use that starts again without one (listed again
--     after a sweep missed it);
--   'reactivated': a win-back starts (subscription_spells.start_kind 'win_back': it lapsed at
--     its `expires_at` and came back, at its estimated comeback): the same subscriptions, at
--     the same times, as subscription_events' win-back `reactivated` events and reactivations'
--     `won_back` (docs/analytics.md, "Win-backs"; sql/tests/win_back_events_match_mrr_changes);
--   'churned': a spell ends and none follows (its use ran out at `expires_at`, or it was no
--     longer listed); the amount lost is `amount_before`;
--   'expansion' / 'contraction': the billing period changed (monthly <-> yearly, or from or to
--     'unknown') and the amount rose / fell;
--   'price_change': same period, another amount (the price book changed; a version or a
--     renewal at an unchanged price is such a row with a change of 0);
--   'period_switch': the period changed and the amount did not (or is not known: no price).
--
-- @test unique(subscription_id, changed_at)
-- @test not_null(subscription_id, changed_at, day, is_base, movement, is_priced)
-- @test accepted_values(movement: new, reactivated, churned, expansion, contraction, price_change, period_switch)

with clock as (
    select
        as_of,
        first_sync_at::date as first_day
    from analytics.as_of
),

starts as (
    -- the starts and ends up to as_of only (a start and an end that meet share their instant),
    -- so the join does not pair up the ends after as_of only to drop them
    select
        subscription_id,
        service_id,
        spell_start as changed_at,
        period as period_after,
        mrr_amount as amount_after,
        start_kind
    from analytics.mrr_spells
    where spell_start <= (select as_of from clock)
),

ends as (
    select
        subscription_id,
        service_id,
        spell_end as changed_at,
        period as period_before,
        mrr_amount as amount_before
    from analytics.mrr_spells
    where spell_end <= (select as_of from clock)
),

changes as (
    select
        coalesce(starts.subscription_id, ends.subscription_id) as subscription_id,
        coalesce(starts.service_id, ends.service_id) as service_id,
        coalesce(starts.changed_at, ends.changed_at) as changed_at,
        ends.period_before,
        starts.period_after,
        starts.start_kind,
        ends.subscription_id is not null as had_spell,
        starts.subscription_id is not null as has_spell,
        case when ends.subscription_id is null then 0 else ends.amount_before end
            as amount_before,
        case when starts.subscription_id is null then 0 else starts.amount_after end
            as amount_after
    from starts
    full outer join ends
        on ends.subscription_id = starts.subscription_id
        and ends.changed_at = starts.changed_at
),

final as (
    select
        changes.subscription_id,
        changes.service_id,
        changes.changed_at,
        greatest(
            (changes.changed_at - interval 1 microsecond)::date, (select first_day from clock)
        ) as day,
        (changes.changed_at - interval 1 microsecond)::date <= (select first_day from clock)
            as is_base,
        changes.period_before,
        changes.period_after,
        changes.amount_before,
        changes.amount_after,
        changes.amount_before is not null and changes.amount_after is not null as is_priced,
        case
            when not changes.had_spell and changes.start_kind = 'win_back' then 'reactivated'
            when not changes.had_spell then 'new'
            when not changes.has_spell then 'churned'
            when changes.period_before <> changes.period_after
                and changes.amount_after > changes.amount_before
                then 'expansion'
            when changes.period_before <> changes.period_after
                and changes.amount_after < changes.amount_before
                then 'contraction'
            when changes.period_before <> changes.period_after then 'period_switch'
            else 'price_change'
        end as movement
    -- every start and end is up to as_of already, so no row needs the clock beside it
    from changes
)

select * from final
order by changed_at, subscription_id
