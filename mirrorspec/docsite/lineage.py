"""The lineage graph (feed → landing zone folder → Delta table, and relationships between Delta
tables) as inline SVG. The SVG is complete without JavaScript; site.js adds pan/zoom, focus on
one table and its neighbours, and highlighting, from the data-* attributes written here."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

NODE_W, NODE_H = 250, 46
COL_GAP, ROW_GAP = 90, 14
TOP, LEFT = 34, 8
COLUMNS = ("feed", "landing zone", "Delta table")
REF_MARGIN = 110  # room right of the Delta tables for relationships arcs
REF_COLOURS = 6  # arcs cycle through this many colours (style.css: path[data-c])


@dataclass(frozen=True)
class Node:
    """One box of the graph. `href` makes it a link; `state` colours it (ok, failed, …)."""

    key: str
    column: int
    label: str
    sublabel: str = ""
    href: str | None = None
    state: str = "none"


@dataclass(frozen=True)
class Edge:
    """`flow`: data moves from source to target; `reference`: a relationships test of the
    source table points at the target table (drawn dashed, right of the Delta tables)."""

    source: str
    target: str
    kind: str = "flow"


def layout(nodes: list[Node], edges: list[Edge]) -> dict[str, tuple[float, float]]:
    """Top-left corner of each node: landing folders and Delta tables one per row in the given
    order; each feed beside the first folder it writes, never overlapping another (the
    folders of a feed are drawn together: collect.lineage)."""
    step = NODE_H + ROW_GAP
    where: dict[str, tuple[float, float]] = {}
    for column in (1, 2):
        members = [n for n in nodes if n.column == column]
        for index, node in enumerate(members):
            where[node.key] = (LEFT + column * (NODE_W + COL_GAP), TOP + index * step)
    wanted = []
    for index, node in enumerate(n for n in nodes if n.column == 0):
        ys = [where[e.target][1] for e in edges
              if e.source == node.key and e.kind == "flow" and e.target in where]
        wanted.append((min(ys) if ys else TOP + index * step, index, node))
    floor = float(TOP)
    for y, _index, node in sorted(wanted, key=lambda w: (w[0], w[1])):
        y = max(y, floor)
        where[node.key] = (LEFT, y)
        floor = y + step
    return where


def render_svg(nodes: list[Node], edges: list[Edge], title: str = "Lineage") -> str:
    """Draw nodes in three columns with curved edges between them."""
    where = layout(nodes, edges)
    references = [e for e in edges if e.kind == "reference"
                  and e.source in where and e.target in where]
    width = LEFT * 2 + 3 * NODE_W + 2 * COL_GAP + (REF_MARGIN if references else 0)
    height = max((y for _x, y in where.values()), default=TOP) + NODE_H + 8
    parts = [f'<svg class="lineage" xmlns="http://www.w3.org/2000/svg" role="img" '
             f'viewBox="0 0 {width} {height:.0f}" width="{width}" height="{height:.0f}" '
             f'data-geometry="{NODE_W} {NODE_H} {COL_GAP} {ROW_GAP} {TOP} {LEFT} {REF_MARGIN}" '
             f'aria-label="{escape(title)}"><title>{escape(title)}</title>']
    for column, name in enumerate(COLUMNS):
        x = LEFT + column * (NODE_W + COL_GAP) + NODE_W / 2
        parts.append(f'<text class="lineage-heading" x="{x:.0f}" y="18" '
                     f'text-anchor="middle">{escape(name)}</text>')
    for index, edge in enumerate(references):
        parts.append(f'<path class="lineage-ref" data-from="{escape(edge.source)}" '
                     f'data-to="{escape(edge.target)}" data-c="{index % REF_COLOURS}" '
                     f'd="{reference_path(where[edge.source], where[edge.target])}" '
                     f'marker-end="url(#arrow)"><title>relationships: '
                     f'{escape(edge.source.split(":", 1)[-1])} → '
                     f'{escape(edge.target.split(":", 1)[-1])}</title></path>')
    for edge in edges:
        if edge.kind != "flow" or edge.source not in where or edge.target not in where:
            continue
        parts.append(f'<path class="lineage-edge" data-from="{escape(edge.source)}" '
                     f'data-to="{escape(edge.target)}" '
                     f'd="{flow_path(where[edge.source], where[edge.target])}" '
                     f'marker-end="url(#arrow)"/>')
    parts.append('<defs><marker id="arrow" viewBox="0 0 10 10" refX="4" refY="5" '
                 'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
                 '<path d="M0,0 L10,5 L0,10 z" class="lineage-arrow"/></marker></defs>')
    for node in nodes:
        parts.append(_box(node, *where[node.key]))
    parts.append("</svg>")
    return "".join(parts)


def flow_path(source: tuple[float, float], target: tuple[float, float]) -> str:
    """A curve from the right side of `source` to the left side of `target` (site.js draws
    the same curve when it moves the boxes)."""
    (x1, y1), (x2, y2) = source, target
    x1, y1, y2 = x1 + NODE_W, y1 + NODE_H / 2, y2 + NODE_H / 2
    mid = (x1 + x2) / 2
    return f"M{x1:.1f},{y1:.1f} C{mid:.1f},{y1:.1f} {mid:.1f},{y2:.1f} {x2 - 6:.1f},{y2:.1f}"


def reference_path(source: tuple[float, float], target: tuple[float, float]) -> str:
    """An arc right of two Delta tables that bulges further the more rows it spans, so arcs
    nest instead of lying on top of each other (site.js draws the same arc)."""
    (x1, y1), (_x2, y2) = source, target
    right, y1, y2 = x1 + NODE_W, y1 + NODE_H / 2 - 6, y2 + NODE_H / 2 + 6
    rows = abs(y2 - y1) / (NODE_H + ROW_GAP)
    bulge = right + 18 + min(rows, 8) * 10
    return f"M{right:.1f},{y1:.1f} C{bulge:.1f},{y1:.1f} {bulge:.1f},{y2:.1f} {right + 6:.1f},{y2:.1f}"


def _box(node: Node, x: float, y: float) -> str:
    box = (f'<g class="lineage-node lineage-{node.state} lineage-col{node.column}" '
           f'data-key="{escape(node.key)}" data-col="{node.column}" '
           f'transform="translate({x:.1f},{y:.1f})">'
           f'<title>{escape(node.label)}{" — " + escape(node.sublabel) if node.sublabel else ""}'
           f'</title><rect width="{NODE_W}" height="{NODE_H}" rx="8"/>'
           f'<text x="12" y="19" class="lineage-label">{escape(_fit(node.label, 30))}</text>')
    if node.sublabel:
        box += f'<text x="12" y="36" class="lineage-sublabel">{escape(_fit(node.sublabel, 38))}</text>'
    box += "</g>"
    if node.href:
        box = f'<a href="{escape(node.href)}">{box}</a>'
    return box


def _fit(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
