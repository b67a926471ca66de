"""The static documentation site: `mirrorspec docs generate` / `mirrorspec docs serve`.

`generate_site(plan, out_dir, status, run_results)` writes index.html, one page per table
(`tables/<unique_id>.html`) and catalog.json; everything is inline (CSS, JS, the lineage SVG),
so the site works offline from any static file host. Pure Python: imported only by commands;
imports the compile half, `readers` and the result files, never `spark`.
"""

from mirrorspec.docsite.render import generate_site
from mirrorspec.docsite.serve import make_server

__all__ = ["generate_site", "make_server"]
