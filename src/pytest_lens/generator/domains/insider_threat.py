"""Insider threat: a departing engineer's after-hours downloads grow until exfiltration attempts trip the DLP gateway."""

from __future__ import annotations

from pytest_lens.generator.spec import DomainSpec, EventSpec, Role, SeriesSpec, Shape, StoryPhrases
from pytest_lens.generator.themes import CAFETERIA, PARKING_GARAGE, PRINT_FLEET

__all__ = ["INSIDER_THREAT"]

_CLOUD = ("to a personal cloud drive", ("personal cloud drive", "personal cloud storage", "personal cloud account"))

INSIDER_THREAT = DomainSpec(
    name="insider_threat",
    code="it",
    description="An engineer who has resigned copies design files after hours and tries to move them out.",
    series=(
        SeriesSpec("user dvance", "after-hours downloads", 90, "MB", decimals=1, noise=0.02, shape=Shape.DRIFT, gain=8, role=Role.PRIMARY),
        SeriesSpec("user dvance", "repository reads", 40, noise=0.06, shape=Shape.DRIFT, gain=3),
        SeriesSpec("user dvance", "wiki edits", 6, noise=0.2),
        SeriesSpec("dlp gateway", "blocked uploads", 2, noise=0.15, shape=Shape.CONSEQUENCE, gain=12, role=Role.SECONDARY),
        SeriesSpec("dlp gateway", "inspected transfers", 5600, noise=0.04),
        SeriesSpec("vpn", "failed logins", 40, noise=0.08, shape=Shape.BUMP, gain=1.5, role=Role.HERRING),
        SeriesSpec("vpn", "concurrent users", 880, noise=0.04),
        SeriesSpec("directory", "sign-ins", 5200, noise=0.03, role=Role.VOLUME),
        SeriesSpec("directory", "password resets", 31, noise=0.12),
        SeriesSpec("endpoint protection", "malware detections", 3, noise=0.15, role=Role.SUSPECT),
        SeriesSpec("endpoint protection", "laptops reporting", 96.4, "%", decimals=1, noise=0.004),
        SeriesSpec("design repository", "clones", 310, noise=0.05),
        SeriesSpec("design repository", "storage", 2.4, "TB", decimals=1, noise=0.01),
        SeriesSpec("web proxy", "blocked sites", 150, noise=0.08),
        SeriesSpec("privileged access", "elevations", 12, noise=0.15),
        SeriesSpec("access requests", "opened", 44, noise=0.1),
    ),
    herring_start=EventSpec(
        "VPN client {vpn} rolled out to all staff",
        "VPN client {vpn} rolled out",
        ("rollout of VPN client {vpn}", "VPN client {vpn} rollout", "VPN client {vpn} upgrade"),
        section="changes",
    ),
    herring_end=EventSpec(
        "VPN client {vpn} pulled and the previous client restored",
        "VPN client {vpn} pulled",
        ("pulled VPN client {vpn}", "VPN client {vpn} was pulled", "previous VPN client restored"),
        section="changes",
    ),
    escalation=(
        EventSpec("DLP gateway blocked {value} uploads from dvance's laptop to a personal cloud drive.", *_CLOUD),
        EventSpec("Another attempt to sync a design folder to a personal cloud drive was stopped overnight.", *_CLOUD),
        EventSpec("Security analyst traced the blocked uploads to a personal cloud drive signed in on dvance's laptop.", *_CLOUD),
        EventSpec("Blocked archive uploads to a personal cloud drive resumed after midnight.", *_CLOUD),
    ),
    root_cause=EventSpec(
        "HR notice: dvance resigned last week and has accepted a role at {rival}.",
        "accepted a role at {rival}",
        ("joining {rival}", "resigned", "resignation", "role at {rival}", "leaving for {rival}"),
    ),
    corroboration=EventSpec(
        "Laptop forensics: a USB drive registered to dvance copied {gb} GB of design files after midnight.",
        "USB drive registered to dvance",
        ("USB drive", "{gb} GB of design files", "copied design files to USB"),
    ),
    phrases=StoryPhrases(
        system="the engineering access logs",
        area="account activity",
        consequence="blocked uploads at the DLP gateway",
        primary="dvance's after-hours downloads",
        herring="the VPN client {vpn} rollout",
        volume="overall sign-in volume",
        suspect="malware on engineering laptops",
        cause="dvance, who has resigned to join {rival}, is copying design files after hours and trying to move them out "
        "through a personal cloud drive and a USB drive",
        action="Suspend dvance's repository and VPN access, preserve the laptop and USB evidence, bring in HR and legal "
        "before the exit date, and review everything that left through the DLP gateway.",
        dependency_question="Is any user's access pattern changing in a way that deserves attention?",
        why_question="What explains the blocked uploads at the DLP gateway?",
        escalation="blocked uploads to a personal cloud drive",
    ),
    routine_notes=(
        "Quarterly access recertification reminders sent to managers.",
        "{n} dormant accounts disabled after ninety days.",
        "Phishing report button pressed {nn} times by staff.",
        "Robot account keys inventoried for the design repository.",
        "Security awareness module completion at {nn}%.",
        "Firewall rule cleanup flagged {n} unused rules.",
        "Contractor accounts prolonged for the tooling project.",
        "Privileged session recordings archived.",
        "Multi-factor enrolment reached every engineering laptop.",
        "Joiner and leaver tickets reconciled with HR.",
        "Directory activity normal for a weekday.",
    ),
    routine_changes=(
        "enforced disk encryption checks at sign-in",
        "tightened the proxy category for file-sharing sites",
        "granted {n} interns read access to the wiki",
        "renewed the identity provider signing certificate",
    ),
    themes=(PRINT_FLEET, PARKING_GARAGE, CAFETERIA),
    variables={
        "vpn": ("7.1", "7.4", "8.0"),
        "rival": ("Halbrook Systems", "Veyra Semiconductor", "Ostrand Labs"),
        "gb": ("38", "52", "71"),
    },
)
