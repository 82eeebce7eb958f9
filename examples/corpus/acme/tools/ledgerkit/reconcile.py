"""Match bank statement lines against ledger entries and report what does not agree.

A statement line matches the ledger entry with the same reference; amounts must agree to the
cent. Lines without an entry, entries without a line and amount differences are mismatches.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from .money import Money, parse_amount

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Entry:
    """One booking: in the ledger, or one line of a bank statement."""

    reference: str
    booked_on: date
    amount: Money


@dataclass(frozen=True)
class Mismatch:
    """Why a reference did not reconcile: ``missing_in_ledger``, ``missing_in_bank`` or ``amount``."""

    reference: str
    kind: str
    ledger: Money | None = None
    bank: Money | None = None


def load_statement(path: Path, currency: str = "EUR") -> list[Entry]:
    """Read a bank export with the columns ``reference``, ``date`` (ISO) and ``amount``."""
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    entries = [
        Entry(
            reference=row["reference"].strip(),
            booked_on=date.fromisoformat(row["date"]),
            amount=parse_amount(row["amount"], currency),
        )
        for row in rows
    ]
    log.info("read %d statement lines from %s", len(entries), path)
    return entries


class Reconciler:
    """Reconciles one account for one day; feed it the ledger, then the statement."""

    def __init__(self, ledger: Iterable[Entry]) -> None:
        self._ledger = {entry.reference: entry for entry in ledger}

    def reconcile(self, statement: Iterable[Entry]) -> list[Mismatch]:
        """Every mismatch, sorted by reference; an empty list means the account agrees."""
        seen: set[str] = set()
        out: list[Mismatch] = []
        for line in statement:
            seen.add(line.reference)
            booked = self._ledger.get(line.reference)
            if booked is None:
                out.append(Mismatch(line.reference, "missing_in_ledger", bank=line.amount))
            elif booked.amount != line.amount:
                out.append(Mismatch(line.reference, "amount", ledger=booked.amount, bank=line.amount))
        for reference, booked in self._ledger.items():
            if reference not in seen:
                out.append(Mismatch(reference, "missing_in_bank", ledger=booked.amount))
        return sorted(out, key=lambda m: m.reference)

    def balance(self) -> Money:
        """The sum of the ledger entries (all in one currency)."""
        entries = list(self._ledger.values())
        total = Money(0, entries[0].amount.currency) if entries else Money(0)
        for entry in entries:
            total = total + entry.amount
        return total
