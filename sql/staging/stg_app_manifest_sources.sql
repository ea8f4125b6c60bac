-- stg_app_manifest_sources: the sources of each recorded manifest.
--
-- Grain: one row per (content_hash, ordinal). Read as empty while no recorded manifest had a
-- source.
--
-- @optional devportal.app_manifest_sources(content_hash varchar, ordinal bigint, source_id varchar, source_type varchar)
-- @test unique(content_hash, ordinal)

select
    content_hash,
    ordinal,
    source_id,
    source_type
from devportal.app_manifest_sources
