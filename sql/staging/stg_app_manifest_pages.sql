-- stg_app_manifest_pages: the pages of each recorded manifest.
--
-- Grain: one row per (content_hash, ordinal). Read as empty while no recorded manifest had a
-- page.
--
-- @optional devportal.app_manifest_pages(content_hash varchar, ordinal bigint, slot varchar)
-- @test unique(content_hash, ordinal)

select
    content_hash,
    ordinal,
    slot
from devportal.app_manifest_pages
