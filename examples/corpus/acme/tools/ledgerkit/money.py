"""Exact money values in integer minor units, with allocation that never loses a cent."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal

MINOR_UNITS = {"EUR": 2, "USD": 2, "CHF": 2, "JPY": 0}
_AMOUNT = re.compile(r"^\s*(?P<sign>-)?\s*(?P<symbol>[€$]|CHF\s)?\s*(?P<number>[\d,]+(?:\.\d+)?)\s*$")
_SYMBOLS = {"€": "EUR", "$": "USD", "CHF ": "CHF"}


class CurrencyMismatch(ValueError):
    """Two amounts in different currencies were combined."""


@dataclass(frozen=True, order=True)
class Money:
    """An amount of one currency, stored as an integer number of minor units."""

    minor: int
    currency: str = "EUR"

    @classmethod
    def of(cls, amount: str | Decimal, currency: str = "EUR") -> Money:
        """Build from a decimal amount, rounding half to even at the currency's precision."""
        places = MINOR_UNITS[currency]
        value = Decimal(amount).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)
        return cls(int(value.scaleb(places)), currency)

    def _check(self, other: Money) -> None:
        if other.currency != self.currency:
            raise CurrencyMismatch(f"cannot combine {self.currency} and {other.currency}")

    def __add__(self, other: Money) -> Money:
        self._check(other)
        return Money(self.minor + other.minor, self.currency)

    def __sub__(self, other: Money) -> Money:
        self._check(other)
        return Money(self.minor - other.minor, self.currency)

    def allocate(self, ratios: list[int]) -> list[Money]:
        """Split by integer ratios; the cents left over go to the first parts, one each.

        >>> [m.minor for m in Money(100).allocate([1, 1, 1])]
        [34, 33, 33]
        """
        if not ratios or any(r < 0 for r in ratios) or sum(ratios) == 0:
            raise ValueError("ratios must be non-negative and not all zero")
        total = sum(ratios)
        parts = [self.minor * r // total for r in ratios]
        for k in range(self.minor - sum(parts)):
            parts[k % len(parts)] += 1
        return [Money(p, self.currency) for p in parts]

    def __str__(self) -> str:
        places = MINOR_UNITS[self.currency]
        return f"{Decimal(self.minor).scaleb(-places):.{places}f} {self.currency}"


def parse_amount(text: str, default_currency: str = "EUR") -> Money:
    """Read an amount as written on a bank statement: ``-€1,234.50``, ``$12``, ``CHF 99.90``."""
    match = _AMOUNT.match(text)
    if match is None:
        raise ValueError(f"not an amount: {text!r}")
    symbol = match.group("symbol")
    currency = _SYMBOLS[symbol] if symbol else default_currency
    number = match.group("number").replace(",", "")
    money = Money.of(number, currency)
    return Money(-money.minor, currency) if match.group("sign") else money
