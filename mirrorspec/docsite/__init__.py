"""The static documentation site: `mirrorspec docs generate` / `mirrorspec docs serve`.

`generate_site(plan, out_dir, status, run_results)` writes index.html, one page per table
(`tables/<unique_id>.html`) and catalog.json; everything is inline (CSS, JS, the lineage SVG),
so the site works offline from any static file host. Pure Python: imported only by commands;
imports the compile half, `readers` and the result files, never `spark`.

- `build`: the site from a compiled plan and what the runs left behind;
- `collect`: what the site shows, gathered from the plan, the monitoring JSON and results;
- `delta_stats`: what it shows about a Delta table, read through delta-rs;
- `lineage`: the lineage graph (feed → landing folder → Delta table, relationships);
- `render`: the static pages from the Jinja2 templates in `templates/`;
- `serve`: `mirrorspec docs serve`, the site on localhost.
"""

from mirrorspec.docsite.render import generate_site
from mirrorspec.docsite.serve import make_server

__all__ = ["generate_site", "make_server"]
