"""The peer: dlt's declarative `rest_api` source as a dlt user would configure it (bearer auth,
`json_link` on `next_page_url`, `data` selector, merge on `id`, dlt's defaults otherwise) into a
fresh DuckDB file; prints one JSON line with what it loaded. `python -m benchmarks.peer_rest_api
--base-url URL --warehouse DIR/peer.duckdb --pipelines-dir DIR/dlt`"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import dlt
from dlt.sources.rest_api import rest_api_source

SUBSCRIPTIONS_PATH = "api/v1/developer/subscriptions"
TOKEN_ENV = "SOURCES__DEVPORTAL__ACCESS_TOKEN"


def build_source(base_url: str, token: str) -> object:
    """The `rest_api` source for the subscriptions endpoint, as the dlt docs show it."""
    return rest_api_source(
        {
            "client": {
                "base_url": base_url.rstrip("/") + "/",
                "auth": {"type": "bearer", "token": token},
                "paginator": {"type": "json_link", "next_url_path": "next_page_url"},
            },
            "resources": [
                {
                    "name": "subscriptions",
                    "endpoint": {"path": SUBSCRIPTIONS_PATH, "data_selector": "data"},
                    "primary_key": "id",
                    "write_disposition": "merge",
                }
            ],
        },
        name="devportal_peer",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--warehouse", required=True, help="fresh DuckDB file")
    parser.add_argument("--pipelines-dir", required=True, help="fresh dlt working folder")
    args = parser.parse_args(argv)
    token = os.environ.get(TOKEN_ENV) or sys.exit(f"set {TOKEN_ENV}")  # never in argv
    started = time.perf_counter()
    pipeline = dlt.pipeline(
        pipeline_name="peer_rest_api",
        pipelines_dir=args.pipelines_dir,
        destination=dlt.destinations.duckdb(args.warehouse),
        dataset_name="devportal",
    )
    pipeline.run(build_source(args.base_url, token))
    seconds = time.perf_counter() - started
    with pipeline.sql_client() as client:
        rows = client.execute_sql("SELECT count(*) FROM subscriptions")
    print(json.dumps({"rows": int(rows[0][0]) if rows else 0, "seconds": seconds}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
