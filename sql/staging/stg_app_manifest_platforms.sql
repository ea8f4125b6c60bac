-- stg_app_manifest_platforms: the supportedPlatforms entries of each recorded manifest.
--
-- Grain: one row per (content_hash, ordinal), ordinal being the 0-based array index.
-- Read as empty while no manifest has listed a platform (dlt creates the table on first rows).
--
-- @optional devportal.app_manifest_platforms(content_hash varchar, ordinal bigint, platform varchar)
-- @test unique(content_hash, ordinal)

select
    content_hash,
    ordinal,
    platform
from devportal.app_manifest_platforms
