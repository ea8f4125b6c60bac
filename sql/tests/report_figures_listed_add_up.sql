-- report_figures_listed_add_up: ties the live subscriptions listed now to what the report says
-- of each (analytics.report_figures, from analytics.subscriptions_current).
--
-- Expects: listed = usable + listed and expired + listed with an unreadable expiry; read =
--   listed + removed; the usable lifetime plans (no expiry sent) within usable; every live
--   subscription listed with no expiry sent is usable (a lifetime plan), none with an
--   unreadable one is. So nothing listed is left out of the report's lines.
-- Returns: the figures when they do not add up.

with removed as (
    select count(*) as removed
    from analytics.subscriptions_current
    where not is_test and is_removed
),
lifetime as (
    select
        count(*) filter (where not is_usable and expiry_kind = 'lifetime') as lifetime_not_usable,
        count(*) filter (where is_usable and expiry_kind = 'unreadable') as unreadable_usable
    from analytics.subscriptions_current
    where not is_test and not is_removed
)
select figures.subscriptions_read, figures.subscriptions_listed, figures.usable_subscribers,
       figures.listed_expired, figures.expiry_unreadable, figures.usable_no_expiry,
       removed.removed, lifetime.lifetime_not_usable, lifetime.unreadable_usable
from analytics.report_figures as figures
cross join removed
cross join lifetime
where figures.subscriptions_listed
        <> figures.usable_subscribers + figures.listed_expired + figures.expiry_unreadable
   or figures.subscriptions_read <> figures.subscriptions_listed + removed.removed
   or figures.usable_no_expiry > figures.usable_subscribers
   or lifetime.lifetime_not_usable <> 0
   or lifetime.unreadable_usable <> 0
