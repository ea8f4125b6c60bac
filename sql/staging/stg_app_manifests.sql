-- stg_app_manifests: every distinct manifest.json content recorded by `devportal manifest`.
--
-- Grain: one row per content_hash (sha256 of the manifest's bytes): loading the same file
-- twice is one row. Absent until the first manifest is recorded (the table does not exist:
-- an empty relation stands in, and app_releases builds, empty).
--
-- @optional devportal.app_manifests(content_hash varchar, name varchar, version varchar, build_path varchar, error_count bigint, warning_count bigint, loaded_at timestamp, manifest_path varchar, size_bytes bigint)
-- @test unique(content_hash)
-- @test not_null(content_hash, loaded_at)

select
    content_hash,
    name as app_name,
    version,
    build_path,
    error_count,
    warning_count,
    loaded_at,
    manifest_path,
    size_bytes
from devportal.app_manifests
