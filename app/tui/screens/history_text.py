"""What the History screen says in words: its title and its one-line totals. Text and
Content, never markup: agent names and paths are data."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.text import Text
from textual.content import Content

from app.tui.safe_text import as_text
from app.tui.widgets.history_charts import HistoryCharts
from registry.answered import answers_line
from registry.history.reader import HistorySnapshot
from registry.history.summary import cost_text, duration, tokens_text
from registry.vocabulary import Activity
from registry.wording import counted


def when(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if moment else "an unknown time"


def _hour(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%m-%d %H:00")


def title_text(
    snapshot: HistorySnapshot | None, agent: str | None, charts: HistoryCharts | None
) -> Text:
    """History · built … · N agents (or the agent) · the range's first → last hour."""
    if snapshot is None:
        return Text("History", "bold")
    if agent:
        showing = Text.assemble("agent ", as_text(agent, "bold"))
    else:
        showing = Text(counted(len(snapshot.agents), "agent"))
    span = ""
    summary = charts.summary if charts else None
    if summary and summary.first_hour and summary.last_hour:
        hours = int((summary.last_hour - summary.first_hour).total_seconds() // 3600) + 1
        span = f" · {_hour(summary.first_hour)} → {_hour(summary.last_hour)} UTC ({hours} h)"
    built = f" · built {when(snapshot.built_at)} · "
    return Text.assemble(("History", "bold"), built, showing, span)


def totals_content(snapshot: HistorySnapshot | None, charts: HistoryCharts | None) -> Content:
    """The range in one line: the waits for a person, outcomes, tokens and cost, each
    figure saying whether it is measured or estimated (the answer times are in the
    table's last row, cancels in its own column)."""
    if snapshot is None or charts is None:
        return Content("")
    total = charts.summary.total
    rate = total.error_rate
    parts: list[str | Content] = [
        f"waited for you {duration(total.activity_ms[Activity.WAITING])}",
        f"{total.completed} done",
        counted(total.errored, "error") + (f" ({100 * rate:.0f} %)" if rate is not None else ""),
    ]
    cost = total.cost
    if charts.prices_error:
        parts.append(Content.styled("prices.toml unreadable: no cost", "$text-error"))
    elif cost.tokens:
        estimated = cost.tokens_estimated
        how = f"{tokens_text(estimated)} estimated" if estimated else "measured"
        parts.append(f"{tokens_text(cost.tokens)} tokens ({how})")
        parts.append(f"{cost_text(cost)} (estimated)")
    answered = answers_line(charts.answers) if charts.answers else None
    if answered:
        parts.append(answered)
    parts.append(Content.assemble(("│", "red"), f" {counted(charts.restarts, 'restart')}"))
    if snapshot.malformed_total:
        parts.append(f"{counted(snapshot.malformed_total, 'malformed line')} skipped")
    return Content(" · ").join(parts)
