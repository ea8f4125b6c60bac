-- app_releases: the recorded versions of the app's manifest.json.
--
-- Grain: one row per recorded manifest content (content_hash); `release_number` orders them by
-- when they were first recorded. Absent until `devportal manifest` records a manifest.
-- `platforms`: the supportedPlatforms, comma separated in manifest order.
-- `platforms_added`, `platforms_removed`: compared with the previous release of the same app
--   name (NULL for an app's first release; the desktop client forbids removing a live one).
-- `source_count`, `page_count`: entries of `sources` / `pages`.
-- `error_count`, `warning_count`: findings of the validator; `is_valid` means no error.
--
-- @test unique(content_hash)
-- @test not_null(content_hash, release_number, platform_count, source_count, page_count)

with manifests as (
    select *
    from analytics.stg_app_manifests
),

platforms as (
    select *
    from analytics.stg_app_manifest_platforms
),

releases as (
    select
        content_hash,
        app_name,
        version,
        loaded_at,
        error_count,
        warning_count,
        manifest_path,
        row_number() over (order by loaded_at, content_hash) as release_number,
        lag(content_hash) over (
            partition by app_name order by loaded_at, content_hash
        ) as previous_content_hash
    from manifests
),

platform_lists as (
    -- ordinal is never NULL (dlt's column is NOT NULL): `nulls first` changes no order, it is
    -- the null order every engine can spell in an aggregate (BigQuery has no NULLS LAST there)
    select
        content_hash,
        string_agg(platform, ',' order by ordinal nulls first) as platforms,
        count(*) as platform_count
    from platforms
    group by content_hash
),

added_platforms as (
    select
        releases.content_hash,
        string_agg(platforms.platform, ',' order by platforms.ordinal nulls first) as platforms_added
    from releases
    inner join platforms using (content_hash)
    where not exists (
        select 1
        from platforms as previous
        where
            previous.content_hash = releases.previous_content_hash
            and previous.platform = platforms.platform
    )
    group by releases.content_hash
),

removed_platforms as (
    select
        releases.content_hash,
        string_agg(previous.platform, ',' order by previous.ordinal nulls first) as platforms_removed
    from releases
    inner join platforms as previous on previous.content_hash = releases.previous_content_hash
    where not exists (
        select 1
        from platforms as current_platforms
        where
            current_platforms.content_hash = releases.content_hash
            and current_platforms.platform = previous.platform
    )
    group by releases.content_hash
),

source_counts as (
    select
        content_hash,
        count(*) as source_count
    from analytics.stg_app_manifest_sources
    group by content_hash
),

page_counts as (
    select
        content_hash,
        count(*) as page_count
    from analytics.stg_app_manifest_pages
    group by content_hash
),

final as (
    select
        releases.content_hash,
        releases.release_number,
        releases.app_name,
        releases.version,
        releases.loaded_at,
        platform_lists.platforms,
        coalesce(platform_lists.platform_count, 0) as platform_count,
        case
            when releases.previous_content_hash is not null
                then coalesce(added_platforms.platforms_added, '')
        end as platforms_added,
        case
            when releases.previous_content_hash is not null
                then coalesce(removed_platforms.platforms_removed, '')
        end as platforms_removed,
        coalesce(source_counts.source_count, 0) as source_count,
        coalesce(page_counts.page_count, 0) as page_count,
        releases.error_count,
        releases.warning_count,
        releases.error_count = 0 as is_valid,
        releases.manifest_path
    from releases
    left join platform_lists using (content_hash)
    left join added_platforms using (content_hash)
    left join removed_platforms using (content_hash)
    left join source_counts using (content_hash)
    left join page_counts using (content_hash)
)

select * from final
order by release_number
