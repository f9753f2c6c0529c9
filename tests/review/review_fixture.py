"""A repository with two agents' work waiting for review: the state behind the Review
screen's snapshot test and its screenshot (scripts/screenshots.py). Build it with the
registry's clock and job ids pinned, and git's identity and dates fixed."""

from __future__ import annotations

from pathlib import Path

from app.review.flow import ReviewFlow
from app.review.worktree import plan_worktree, prepare_worktree
from app.settings import Settings
from registry.jobs import Registry
from tests.review.git_repos import commit_file, make_repo

CART = '''"""The shopping cart."""

from dataclasses import dataclass, field


@dataclass
class Cart:
    items: dict[str, int] = field(default_factory=dict)
    prices: dict[str, float] = field(default_factory=dict)

    def add(self, sku: str, price: float, quantity: int = 1) -> None:
        self.items[sku] = self.items.get(sku, 0) + quantity
        self.prices[sku] = price

    def total(self) -> float:
        return sum(self.prices[sku] * n for sku, n in self.items.items())
'''

CART_WITH_CODES = (
    CART.replace(
        "    prices: dict[str, float] = field(default_factory=dict)\n",
        "    prices: dict[str, float] = field(default_factory=dict)\n"
        "    discount: float = 0.0  # a fraction: 0.1 is 10 % off\n",
    )
    .replace(
        "    def total(self) -> float:\n"
        "        return sum(self.prices[sku] * n for sku, n in self.items.items())\n",
        "    def apply_code(self, code: str) -> bool:\n"
        '        """Take a discount code; False (and no discount) for an unknown one."""\n'
        "        rate = CODES.get(code.strip().upper())\n"
        "        if rate is None:\n"
        "            return False\n"
        "        self.discount = rate\n"
        "        return True\n"
        "\n"
        "    def total(self) -> float:\n"
        "        gross = sum(self.prices[sku] * n for sku, n in self.items.items())\n"
        "        return round(gross * (1 - self.discount), 2)\n",
    )
    .replace(
        "from dataclasses import dataclass, field\n",
        'from dataclasses import dataclass, field\n\nCODES = {"SPRING10": 0.10, "STAFF25": 0.25}\n',
    )
)

TESTS = """from shop.cart import Cart


def test_a_known_code_takes_its_share_off() -> None:
    cart = Cart()
    cart.add("mug", 12.0, 2)
    assert cart.apply_code(" spring10 ")
    assert cart.total() == 21.6


def test_an_unknown_code_changes_nothing() -> None:
    cart = Cart()
    cart.add("mug", 12.0)
    assert not cart.apply_code("FREE")
    assert cart.total() == 12.0
"""

CART_WITH_TAX = CART.replace(
    "        return sum(self.prices[sku] * n for sku, n in self.items.items())\n",
    "        net = sum(self.prices[sku] * n for sku, n in self.items.items())\n"
    "        return round(net * 1.2, 2)  # VAT\n",
)


def build_review_state(state_dir: Path, repo: Path) -> list[str]:
    """Two finished jobs on one repository, both touching shop/cart.py; their ids."""
    make_repo(repo, {"README.md": "# shop\n", "shop/__init__.py": "", "shop/cart.py": CART})
    settings = Settings(state_dir=state_dir)
    registry = Registry.open(state_dir)
    work = [
        ("add discount codes to the cart", [("shop/cart.py", CART_WITH_CODES, "discount codes"),
                                            ("tests/test_cart.py", TESTS, "tests for codes")],
         "README.md", "# shop\n\nDiscount codes: SPRING10, STAFF25.\n"),
        ("charge VAT in the cart total", [("shop/cart.py", CART_WITH_TAX, "VAT in totals")],
         None, ""),
    ]  # fmt: skip
    job_ids = []
    for prompt, commits, loose, text in work:
        job = registry.register(prompt, "claude", "alpha", sign_events=False)
        tree = prepare_worktree(settings, registry, job.job_id, plan_worktree(repo, "main")).path
        registry.set_status(job.job_id, "running", "picked by alpha")
        registry.publish(job.job_id, "started", "reading shop/cart.py")
        for name, content, message in commits:
            commit_file(tree, name, content, message)
        if loose is not None:
            (tree / loose).write_text(text, encoding="utf-8")
        registry.publish(job.job_id, "completed", "done")
        job_ids.append(job.job_id)
    ReviewFlow(settings, registry=registry).follow_jobs()
    registry.db.close()
    return job_ids
