"""ledgerkit: money arithmetic and bank reconciliation helpers for the Acme ledger service.

Amounts are kept as integer minor units (cents) so that sums never drift; see ``money``.
Statement lines from the bank are matched against ledger entries by ``reconcile``.
"""

from .money import Money, parse_amount
from .reconcile import Entry, Mismatch, Reconciler, load_statement

__all__ = ["Entry", "Mismatch", "Money", "Reconciler", "load_statement", "parse_amount"]
__version__ = "1.4.0"
