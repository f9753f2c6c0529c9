"""The price table (``<state>/prices.toml``) and the cost of recorded tokens.

Prices are data the user owns, never numbers in code: the first use writes the
documented default (``prices.default.toml`` beside this module) into the state
dir, and every cost is computed from that file when it is shown, so an edit
needs no rebuild. Every cost is an estimate, and says whose: the table's, or
the agent's own (Aider prices its messages itself).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Protocol

from registry.history.errors import HistoryError

DEFAULT_PRICES = Path(__file__).with_name("prices.default.toml")
PRICE_FIELDS = ("input", "output", "cache_read", "cache_write")
PER_TOKENS = 1_000_000


class BadPrices(HistoryError):
    """prices.toml cannot be used as a price table (the line says where and why)."""


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens of each kind, for the agents and models matched."""

    agent: str
    model: str
    input: float
    output: float
    cache_read: float
    cache_write: float

    def matches(self, agent: str, model: str) -> bool:
        return fnmatchcase(agent.lower(), self.agent.lower()) and fnmatchcase(
            model.lower(), self.model.lower()
        )


@dataclass(frozen=True)
class PriceTable:
    """The entries of prices.toml, in order (the first match wins)."""

    prices: tuple[Price, ...]
    path: Path | None = None
    _found: dict[tuple[str, str], Price | None] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )  # what each agent and model matched: a month of hours prices the same few pairs

    def price_of(self, agent: str, model: str) -> Price | None:
        key = (agent, model)
        if key not in self._found:
            self._found[key] = next((p for p in self.prices if p.matches(agent, model)), None)
        return self._found[key]


def prices_path(state_dir: Path) -> Path:
    return state_dir / "prices.toml"


def load_prices(state_dir: Path) -> PriceTable:
    """The state dir's price table, written from the default on first use. BadPrices
    names the file and what is wrong (a user's edit gone wrong)."""
    path = prices_path(state_dir)
    if not path.exists():
        state_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".toml.tmp")
        tmp.write_text(DEFAULT_PRICES.read_text(encoding="utf-8"), encoding="utf-8")
        os.replace(tmp, path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BadPrices(f"cannot read {path}: {exc}") from exc
    return PriceTable(parse_prices(data, path), path)


def parse_prices(data: dict[str, Any], path: Path | None = None) -> tuple[Price, ...]:
    """The [[price]] entries of a parsed prices.toml, each checked."""
    where = str(path) if path else "prices.toml"
    entries = data.get("price", [])
    if not isinstance(entries, list):
        raise BadPrices(f"{where}: `price` must be a list of [[price]] tables")
    prices = []
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise BadPrices(f"{where}: [[price]] #{number} is not a table")
        unknown = set(entry) - {"agent", "model", *PRICE_FIELDS}
        if unknown:
            raise BadPrices(f"{where}: [[price]] #{number} has unknown key {sorted(unknown)[0]!r}")
        patterns = [entry.get(key, "*") for key in ("agent", "model")]
        if not all(isinstance(p, str) and p for p in patterns):
            raise BadPrices(f"{where}: [[price]] #{number}: agent and model must be text")
        values = []
        for name in PRICE_FIELDS:
            value = entry.get(name, 0.0)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise BadPrices(
                    f"{where}: [[price]] #{number}: {name} must be a number of dollars >= 0"
                )
            values.append(float(value))
        prices.append(Price(patterns[0], patterns[1], *values))
    return tuple(prices)


class Usage(Protocol):
    """What a cost is computed from (``reader.UsageRow`` has it)."""

    @property
    def agent(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def measured(self) -> bool: ...
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cache_read_tokens(self) -> int: ...
    @property
    def cache_write_tokens(self) -> int: ...
    @property
    def agent_cost_micro_usd(self) -> int | None: ...


@dataclass
class Cost:
    """Tokens and their estimated cost, over some usage rows; each figure says whether
    it is measured (the provider's usage) or estimated."""

    tokens_measured: int = 0  # from the agents' usage records
    tokens_estimated: int = 0  # the agent's own count (Aider)
    usd_from_table: float = 0.0  # priced with prices.toml: an estimate
    usd_from_agents: float = 0.0  # the agents' own cost estimates (Aider)
    unpriced_tokens: int = 0  # no price in the table, and the agent gave none
    unpriced_models: set[str] = field(default_factory=set)

    @property
    def tokens(self) -> int:
        return self.tokens_measured + self.tokens_estimated

    @property
    def usd(self) -> float:
        """The whole estimate (table and agents' own)."""
        return self.usd_from_table + self.usd_from_agents


def tokens_of(row: Usage) -> int:
    return row.input_tokens + row.output_tokens + row.cache_read_tokens + row.cache_write_tokens


def price_usage(rows: Iterable[Usage], table: PriceTable) -> Cost:
    """The tokens and estimated cost of ``rows``: the agent's own cost where it gave
    one, else the table's price for the row's agent and model."""
    cost = Cost()
    for row in rows:
        tokens = tokens_of(row)
        if row.measured:
            cost.tokens_measured += tokens
        else:
            cost.tokens_estimated += tokens
        if row.agent_cost_micro_usd is not None:
            cost.usd_from_agents += row.agent_cost_micro_usd / 1_000_000
            continue
        price = table.price_of(row.agent, row.model)
        if price is None:
            if tokens:
                cost.unpriced_tokens += tokens
                cost.unpriced_models.add(f"{row.agent}/{row.model}")
            continue
        cost.usd_from_table += (
            row.input_tokens * price.input
            + row.output_tokens * price.output
            + row.cache_read_tokens * price.cache_read
            + row.cache_write_tokens * price.cache_write
        ) / PER_TOKENS
    return cost
