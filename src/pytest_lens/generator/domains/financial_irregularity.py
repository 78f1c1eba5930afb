"""Financial irregularity: split invoices and a switched remittance account quietly drain a payables ledger."""

from __future__ import annotations

from pytest_lens.generator.spec import DomainSpec, EventSpec, Role, SeriesSpec, Shape, StoryPhrases
from pytest_lens.generator.themes import FLEET_FUEL, PARKING_GARAGE, WAREHOUSE_DOCK

__all__ = ["FINANCIAL_IRREGULARITY"]

_HELD = ("payment run held for review", ("payment run was held", "held the payment run", "payment runs held", "payment run on hold"))

FINANCIAL_IRREGULARITY = DomainSpec(
    name="financial_irregularity",
    code="fi",
    description="An insider switches a supplier's remittance account and approves split invoices; payments drift up until "
    "reconciliation breaks.",
    series=(
        SeriesSpec("Corvane Supply", "paid", 18400, "USD", noise=0.02, shape=Shape.DRIFT, gain=3.2, role=Role.PRIMARY),
        SeriesSpec("Corvane Supply", "invoices approved", 4, noise=0.15, shape=Shape.DRIFT, gain=2.5),
        SeriesSpec("bank reconciliation", "unreconciled", 4200, "USD", noise=0.06, shape=Shape.CONSEQUENCE, gain=14, role=Role.SECONDARY),
        SeriesSpec("bank reconciliation", "statement entries", 1830, noise=0.03),
        SeriesSpec("payables", "invoices posted", 1240, noise=0.03, role=Role.VOLUME),
        SeriesSpec("payables", "transfers released", 412, noise=0.04),
        SeriesSpec("three-way match", "exceptions", 14, noise=0.08, shape=Shape.BUMP, gain=1.4, role=Role.HERRING),
        SeriesSpec("three-way match", "auto-matched", 91.5, "%", decimals=1, noise=0.004),
        SeriesSpec("treasury", "fx revaluation", 2300, "USD", noise=0.05, role=Role.SUSPECT),
        SeriesSpec("treasury", "cash position", 4.81, "million USD", decimals=2, noise=0.01),
        SeriesSpec("approvals", "turnaround", 6.4, "hours", decimals=1, noise=0.06),
        SeriesSpec("approvals", "overrides", 3, noise=0.2),
        SeriesSpec("vendor master", "record edits", 5, noise=0.2),
        SeriesSpec("expense claims", "submitted", 184, noise=0.06),
        SeriesSpec("purchase orders", "opened", 262, noise=0.05),
        SeriesSpec("credit notes", "agreed", 12, noise=0.15),
        SeriesSpec("settlement discounts", "captured", 3150, "USD", noise=0.08),
    ),
    herring_start=EventSpec(
        "ERP patch {patch} applied to the three-way match module",
        "ERP patch {patch} applied",
        ("applied ERP patch {patch}", "ERP patch {patch} was applied", "patch {patch} to the three-way match module"),
        section="changes",
    ),
    herring_end=EventSpec(
        "ERP patch {patch} reverted after vendor guidance",
        "ERP patch {patch} reverted",
        ("reverted ERP patch {patch}", "ERP patch {patch} was reverted", "reversal of ERP patch {patch}"),
        section="changes",
    ),
    escalation=(
        EventSpec("Payment run held for review after bank reconciliation showed {value} USD unreconciled.", *_HELD),
        EventSpec("Treasury asked for the payment run held for review until the bank confirms the outgoing batch.", *_HELD),
        EventSpec("Second payment run held for review; CFO office notified of the growing unreconciled balance.", *_HELD),
        EventSpec("Payment run held for review again while unreconciled items aged past seven days.", *_HELD),
    ),
    root_cause=EventSpec(
        "Vendor master audit: Corvane Supply's remittance account was switched to a new bank by user {clerk}, "
        "the same user who approved its split invoices.",
        "remittance account was switched to a new bank by user {clerk}",
        (
            "remittance account was switched",
            "{clerk} switched the remittance account",
            "{clerk} changed the remittance account",
            "changed the remittance account",
            "bank details changed by {clerk}",
        ),
    ),
    corroboration=EventSpec(
        "Bank confirmation: the new Corvane Supply account is held by a private individual, not by the supplier.",
        "held by a private individual",
        ("private individual", "not held by the supplier", "personal bank account", "personal account"),
    ),
    phrases=StoryPhrases(
        system="the payables ledger",
        area="payment processing",
        consequence="unreconciled payments",
        primary="payments to Corvane Supply",
        herring="ERP patch {patch}",
        volume="invoice volume",
        suspect="foreign-exchange revaluation",
        cause="user {clerk} switched Corvane Supply's remittance account to a private account and approved split invoices "
        "kept under the approval limit, diverting the payments",
        action="Freeze payments to the switched Corvane Supply account, reverse the vendor master change, require dual "
        "approval for remittance changes and for invoices near the limit, and refer user {clerk} for investigation.",
        dependency_question="Are payments to any supplier growing in a way that deserves a closer look?",
        why_question="Why are payments failing to reconcile?",
        escalation="payment runs held for review",
    ),
    routine_notes=(
        "Month-end accrual checklist on track.",
        "Supplier statements reconciled for {n} suppliers.",
        "Duplicate-invoice scan found nothing new.",
        "Approver delegation for annual leave recorded.",
        "Expense claim backlog down to {nn} items.",
        "Credit-note requests chased with {n} suppliers.",
        "Audit sample of {nn} invoices pulled for quarter-end.",
        "Intercompany balances agreed with the subsidiary ledger.",
        "Withholding tax certificates filed for {n} contractors.",
        "Petty cash counted and signed off.",
        "Payment processing finished inside the normal window.",
        "Aged payables report circulated to budget holders.",
        "Payment file transmitted to the bank before the daily deadline.",
    ),
    routine_changes=(
        "updated the approval matrix for capital spend",
        "onboarded {n} new suppliers",
        "renewed the bank payment certificate",
        "tightened the tolerance on price variances",
        "published the revised travel expense policy",
    ),
    themes=(WAREHOUSE_DOCK, FLEET_FUEL, PARKING_GARAGE),
    variables={
        "patch": ("8.2", "8.4", "9.1", "9.3"),
        "clerk": ("mvance", "tlindqvist", "rkhatri", "dmorel", "jsato"),
    },
)
