"""The small HTML pieces every page builds with: the page itself (one style sheet), escaped table rows, badges."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from fixtures_core.reports.status_words import Look, badge_css


class Html(str):
    """Text that is already HTML: table cells insert it as is (every other cell is escaped)."""


def tr(
    cells: Iterable[str], header: bool = False, numeric: set[int] | frozenset[int] = frozenset(), css: str = ""
) -> str:
    """One table row; ``numeric`` cells are right-aligned, ``Html`` cells are inserted as they are."""
    tag = "th" if header else "td"
    out = []
    for index, cell in enumerate(cells):
        number = ' class="num"' if index in numeric else ""
        text = cell if isinstance(cell, Html) else escape(cell)
        out.append(f"<{tag}{number}>{text}</{tag}>")
    row_class = f' class="{css}"' if css else ""
    return f"<tr{row_class}>" + "".join(out) + "</tr>"


def badge(look: Look, title: str | None = None) -> Html:
    """A status badge in its word and colour (``status_words``)."""
    told = f' title="{escape(title)}"' if title else ""
    return Html(f'<span class="badge {look.css}"{told}>{escape(look.word)}</span>')


CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#212121;
 margin:0 auto;max-width:1100px;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #e0e0e0}
h3{font-size:15px;margin:18px 0 4px}
table{border-collapse:collapse;margin:6px 0}th,td{padding:3px 10px;border-bottom:1px solid #eeeeee;
 text-align:left;vertical-align:top}th{background:#fafafa}td.num,th.num{text-align:right;white-space:nowrap}
table.rows td:first-child{white-space:nowrap}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;color:#fff;font-size:12px}
.verdict{font-size:20px;padding:3px 14px}.flaky{color:#ef6c00;font-weight:600}
.muted{color:#757575}.gating{color:#c62828;font-weight:600}pre{background:#f5f5f5;padding:8px;
 overflow-x:auto;white-space:pre-wrap;word-break:break-all;max-height:24em}
details{margin:6px 0;border:1px solid #e0e0e0;border-radius:4px;padding:4px 10px}
summary{cursor:pointer;font-weight:600}.legend span{margin-right:14px}
.dot{display:inline-block;width:9px;height:9px;border-radius:50%;margin-right:4px}
code{background:#f5f5f5;padding:0 3px}svg.plot{max-width:100%;height:auto;display:block}
.verdict-box{border:2px solid #e0e0e0;border-radius:6px;padding:8px 14px;margin:8px 0}
.verdict-box p{margin:4px 0}tr.regressed td{background:#ffebee}
.filters button{margin-right:6px;border:1px solid #bdbdbd;background:#fff;border-radius:10px;padding:1px 10px;
 cursor:pointer}.filters button.on{background:#424242;color:#fff}table.rows th{cursor:pointer}
.ship-gate-verdict .badge{font-size:16px;padding:3px 12px}
.since{border-left:4px solid #5c6bc0;background:#f5f7ff;padding:4px 12px;margin:8px 0}.since p{margin:2px 0}
p.facts{font-size:12px}.since p.muted{font-size:13px}span.age{font-weight:600}
h2#failed{margin-top:14px}table.failed td{padding:2px 10px}
table.heat td.cell{text-align:center;min-width:38px;padding:2px 4px;font-size:12px;border:1px solid #fff}
table.heat td.cell a{color:inherit;text-decoration:none;display:block}table.heat th{font-size:12px}
.heat-legend{font-size:12px;margin:2px 0}.heat-legend .key{padding:0 6px;margin:0 4px;color:#212121}
pre.excerpt{max-height:7.5em;margin:4px 0 0;font-size:12px;padding:4px 6px}
tr.group-head td{background:#f3f3f3;font-weight:600}tbody.collapsed tr.row.passing{display:none}
tbody.unchanged.collapsed tr:not(.toggle-row){display:none}.since p.move a{font-size:12px;margin-left:6px}
tr.group-head button{margin-left:8px;border:1px solid #bdbdbd;background:#fff;border-radius:10px;cursor:pointer}
.evidence a{margin-right:10px;white-space:nowrap}svg.strip,svg.spark{display:block}
.ship{border:2px solid #e0e0e0;border-radius:6px;padding:4px 14px 8px;margin:10px 0}
.ship h2{border:0;margin:8px 0 4px}ul.broken{margin:4px 0 4px 18px;padding:0}
ul.why-broken{margin:2px 0 6px 18px;padding:0;font-size:12px}
p.why-title{margin:4px 0 0;font-size:12px}
.commits{font-size:13px}.commits p{margin:2px 0}.commits ul{margin:0 0 2px 18px;padding:0}
td.worse{color:#c62828;font-weight:600}
details.metric-detail{border:0;padding:0}details.metric-detail>summary h3{display:inline-block}
.metric-trend{display:flex;align-items:center;gap:8px;margin:1px 0}.metric-trend .name{width:130px;font-size:12px}
.metric-trend .step-text{font-size:12px;max-width:240px}table.trends td.changed{min-width:170px;font-size:13px}
table.trends td:first-child{min-width:9em;max-width:220px;overflow-wrap:break-word}
"""


def document(title: str, body: Sequence[str], script: str = "") -> str:
    """A whole self-contained page: the style sheet inline, the body's parts, an optional inline script."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}{badge_css()}</style></head>\n<body>\n"
        + "\n".join(part for part in body if part)
        + (f"\n<script>{script}</script>" if script else "")
        + "\n</body></html>\n"
    )
