"""The lineage graph (feed → landing zone folder → Delta table, and relationships between Delta
tables) as inline SVG, no JavaScript."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

NODE_W, NODE_H = 250, 46
COL_GAP, ROW_GAP = 90, 14
TOP, LEFT = 34, 8
COLUMNS = ("feed", "landing zone", "Delta table")


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


REF_MARGIN = 70  # room right of the Delta tables for relationships arcs


def render_svg(nodes: list[Node], edges: list[Edge], title: str = "Lineage") -> str:
    """Draw nodes in three columns (rows in the given order) with curved edges between them."""
    rows: dict[int, list[Node]] = {0: [], 1: [], 2: []}
    for node in nodes:
        rows[node.column].append(node)
    height_rows = max((len(r) for r in rows.values()), default=0)
    references = [e for e in edges if e.kind == "reference"]
    width = LEFT * 2 + 3 * NODE_W + 2 * COL_GAP + (REF_MARGIN if references else 0)
    height = TOP + max(height_rows, 1) * (NODE_H + ROW_GAP) + 4
    where: dict[str, tuple[float, float]] = {}
    for column, members in rows.items():
        # centre shorter columns against the tallest one
        offset = (height_rows - len(members)) * (NODE_H + ROW_GAP) / 2
        for index, node in enumerate(members):
            x = LEFT + column * (NODE_W + COL_GAP)
            y = TOP + offset + index * (NODE_H + ROW_GAP)
            where[node.key] = (x, y)
    parts = [f'<svg class="lineage" xmlns="http://www.w3.org/2000/svg" role="img" '
             f'viewBox="0 0 {width} {height:.0f}" width="{width}" height="{height:.0f}" '
             f'aria-label="{escape(title)}"><title>{escape(title)}</title>']
    for column, name in enumerate(COLUMNS):
        x = LEFT + column * (NODE_W + COL_GAP) + NODE_W / 2
        parts.append(f'<text class="lineage-heading" x="{x:.0f}" y="18" '
                     f'text-anchor="middle">{escape(name)}</text>')
    for index, edge in enumerate(references):
        if edge.source not in where or edge.target not in where:
            continue
        (x1, y1), (_x2, y2) = where[edge.source], where[edge.target]
        right, y1, y2 = x1 + NODE_W, y1 + NODE_H / 2 - 6, y2 + NODE_H / 2 + 6
        bulge = right + 22 + (index % 3) * 14
        parts.append(f'<path class="lineage-ref" d="M{right:.1f},{y1:.1f} C{bulge:.1f},{y1:.1f} '
                     f'{bulge:.1f},{y2:.1f} {right + 6:.1f},{y2:.1f}" marker-end="url(#arrow)">'
                     f'<title>relationships: {escape(edge.source.split(":", 1)[-1])} → '
                     f'{escape(edge.target.split(":", 1)[-1])}</title></path>')
    for edge in edges:
        if edge.kind != "flow" or edge.source not in where or edge.target not in where:
            continue
        (x1, y1), (x2, y2) = where[edge.source], where[edge.target]
        x1, y1, y2 = x1 + NODE_W, y1 + NODE_H / 2, y2 + NODE_H / 2
        mid = (x1 + x2) / 2
        parts.append(f'<path class="lineage-edge" d="M{x1:.1f},{y1:.1f} C{mid:.1f},{y1:.1f} '
                     f'{mid:.1f},{y2:.1f} {x2 - 6:.1f},{y2:.1f}" marker-end="url(#arrow)"/>')
    parts.append('<defs><marker id="arrow" viewBox="0 0 10 10" refX="4" refY="5" '
                 'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
                 '<path d="M0,0 L10,5 L0,10 z" class="lineage-arrow"/></marker></defs>')
    for node in nodes:
        x, y = where[node.key]
        box = (f'<g class="lineage-node lineage-{node.state} lineage-col{node.column}">'
               f'<title>{escape(node.label)}{" — " + escape(node.sublabel) if node.sublabel else ""}'
               f'</title><rect x="{x:.1f}" y="{y:.1f}" width="{NODE_W}" height="{NODE_H}" '
               f'rx="8"/><text x="{x + 12:.1f}" y="{y + 19:.1f}" class="lineage-label">'
               f'{escape(_fit(node.label, 30))}</text>')
        if node.sublabel:
            box += (f'<text x="{x + 12:.1f}" y="{y + 36:.1f}" class="lineage-sublabel">'
                    f'{escape(_fit(node.sublabel, 38))}</text>')
        box += "</g>"
        if node.href:
            box = f'<a href="{escape(node.href)}">{box}</a>'
        parts.append(box)
    parts.append("</svg>")
    return "".join(parts)


def _fit(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
