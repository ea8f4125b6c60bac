-- subscription_versions_status_is_its_treatment: ties analytics.subscription_versions to the seed
-- analytics.status_map of this build.
--
-- Expects: every version is treated as the seed says (a status not in it: other), and a status the
--   spec shows (active, canceled) as itself.
-- Returns: the versions treated otherwise, with the treatment the seed gives.

select versions.id, versions.status_sent, versions.status, treatments.treated_as
from analytics.subscription_versions as versions
left join analytics.status_map as treatments
    on treatments.status = versions.status_sent
where versions.status <> coalesce(treatments.treated_as, 'other')
   or (versions.status_sent in ('active', 'canceled')
       and versions.status <> versions.status_sent)
