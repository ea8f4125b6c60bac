-- mrr_spells: what each live subscription adds to MRR, as stretches of time with one amount.
--
-- Grain: one row per (subscription_id, spell_start): consecutive, non-overlapping stretches
-- [spell_start, spell_end) of a live subscription's use, each with one billing period and one
-- price. A subscription counts while it is usable, exactly as daily_subscribers counts it:
-- subscription_spells (from its first paid instant as the syncs revealed it, a start between
-- two syncs at its estimated time; until a version was replaced or its use ran out, a canceled
-- subscription until its `expires_at` (churn at period end), a lapse before a win-back at its
-- `expires_at`, one no longer listed at the sweep that missed it). Those stretches are cut
-- where the billing segment changes (billing_segments: a time t is in the segment with
-- segment_start <= t < segment_end) and where the price of its period changes
-- (price_timeline), so each row has one `period` and one `mrr_amount`.
-- The use after a subscription's last recorded expiry (all of it, with none) is a lifetime
-- plan's (no expiry sent: subscription_versions.use_ends_at; only such a version reaches past
-- it): one row of `period` 'lifetime' that pays no recurring price, `mrr_amount` 0 (NULL
-- without prices, like every amount then). It counts as a subscriber, as daily_subscribers
-- counts it, and adds nothing to MRR (a one-off purchase is no recurring revenue).
-- `period`: the segment's (billing_segments.period), or 'lifetime'; `segment_end`: that
--   segment's expiry (NULL for 'lifetime').
-- `mrr_amount`: the monthly-normalised price after the revenue share of that period then
--   (price_timeline.mrr_amount; yearly / 12), decimal(18, 6); NULL where no price is set.
-- `price_valid_from`: the price row's `valid_from` (NULL for the flat keys or no price).
-- `start_kind`: on the row where a start of use begins, subscription_spells' ('new' or
--   'win_back'); NULL on every other row (a continuation, or a cut).
-- `estimated_until`: the end of the row's part that rests on an estimated start
--   (subscription_spells.estimated_until, within the row), NULL when none does.
--
-- @test unique(subscription_id, spell_start)
-- @test not_null(subscription_id, spell_start, spell_end, period)
-- @test accepted_values(period: monthly, yearly, unknown, lifetime)

with usable_spells as not materialized (
    select
        subscription_id,
        service_id,
        spell_start as used_from,
        spell_end as used_until,
        estimated_until as estimated_to,
        start_kind as use_start_kind
    from analytics.subscription_spells
),

segmented as (
    select
        usable_spells.subscription_id,
        usable_spells.service_id,
        greatest(usable_spells.used_from, segments.segment_start) as segment_used_from,
        least(usable_spells.used_until, segments.segment_end) as segment_used_until,
        usable_spells.used_from,
        usable_spells.estimated_to,
        usable_spells.use_start_kind,
        segments.segment_end,
        segments.period
    from usable_spells
    inner join analytics.billing_segments as segments
        on segments.subscription_id = usable_spells.subscription_id
        and (segments.segment_start is null or segments.segment_start < usable_spells.used_until)
        and segments.segment_end > usable_spells.used_from
),

priced as (
    select
        segmented.subscription_id,
        segmented.service_id,
        greatest(segmented.segment_used_from, timeline.starts_at) as spell_start,
        least(segmented.segment_used_until, timeline.ends_at) as spell_end,
        segmented.period,
        segmented.segment_end,
        timeline.mrr_amount,
        timeline.valid_from as price_valid_from,
        segmented.used_from,
        segmented.estimated_to,
        segmented.use_start_kind
    from segmented
    inner join analytics.price_timeline as timeline
        on timeline.period = segmented.period
        and (timeline.starts_at is null or timeline.starts_at < segmented.segment_used_until)
        and (timeline.ends_at is null or timeline.ends_at > segmented.segment_used_from)
),

lifetime as (
    -- the use past the last recorded expiry, or all of it without one: a lifetime plan's
    select
        usable_spells.subscription_id,
        usable_spells.service_id,
        greatest(usable_spells.used_from, last_segments.segment_end) as spell_start,
        usable_spells.used_until as spell_end,
        'lifetime' as period,
        cast(null as timestamp) as segment_end,
        case when book.has_prices then cast(0 as decimal(18, 6)) end as mrr_amount,
        cast(null as date) as price_valid_from,
        usable_spells.used_from,
        usable_spells.estimated_to,
        usable_spells.use_start_kind
    from usable_spells
    cross join analytics.price_book as book
    left join analytics.billing_segments as last_segments
        on last_segments.subscription_id = usable_spells.subscription_id
        and last_segments.is_last
    where
        last_segments.segment_end is null
        or usable_spells.used_until > last_segments.segment_end
),

all_spells as (
    select * from priced
    union all
    select * from lifetime
),

final as (
    select
        subscription_id,
        service_id,
        spell_start,
        spell_end,
        period,
        segment_end,
        mrr_amount,
        price_valid_from,
        case when spell_start = used_from then use_start_kind end as start_kind,
        case
            when spell_start < estimated_to then least(spell_end, estimated_to)
        end as estimated_until
    from all_spells
    where spell_start < spell_end
)

select * from final
order by subscription_id, spell_start
