"""Names of the warehouse tables that record manifests (recording layer).

Shared by resource.py (which writes them) and history.py (which reads earlier versions back);
the validation modules never see them. Every table lives in the `devportal` dataset; see
resource.py for what each one holds.
"""

from __future__ import annotations

MANIFESTS = "app_manifests"
SOURCES = "app_manifest_sources"
PAGES = "app_manifest_pages"
PLATFORMS = "app_manifest_platforms"
PERMISSIONS = "app_manifest_permissions"
AUTHORIZATION_URLS = "app_manifest_authorization_urls"
MEDIA_DOMAINS = "app_manifest_media_domains"
FINDINGS = "manifest_findings"
TABLES = (
    MANIFESTS,
    SOURCES,
    PAGES,
    PLATFORMS,
    PERMISSIONS,
    AUTHORIZATION_URLS,
    MEDIA_DOMAINS,
    FINDINGS,
)

# The findings table's hard-delete marker: the tombstone row that clears earlier findings.
CLEAR_MARKER = "_clear_previous"
