"""Clinical trial signal: a dose-dependent liver effect surfaces slowly in a multi-site trial's safety data."""

from __future__ import annotations

from pytest_lens.generator.spec import DomainSpec, EventSpec, Role, SeriesSpec, Shape, StoryPhrases
from pytest_lens.generator.themes import CAFETERIA, LIBRARY_DESK, PARKING_GARAGE

__all__ = ["CLINICAL_TRIAL"]

_HELD = ("held dosing", ("dosing held", "dosing was held", "dose holds", "held the dose", "dosing paused"))

CLINICAL_TRIAL = DomainSpec(
    name="clinical_trial",
    code="ct",
    description="Velotrazine raises liver enzymes in the high-dose arm; the effect is dose-dependent and worse in slow metabolisers.",
    series=(
        SeriesSpec("high-dose arm", "mean ALT", 28, "U/L", decimals=1, noise=0.02, shape=Shape.DRIFT, gain=3.4, role=Role.PRIMARY),
        SeriesSpec("high-dose arm", "liver enzyme alerts", 2, noise=0.15, shape=Shape.CONSEQUENCE, gain=11, role=Role.SECONDARY),
        SeriesSpec("high-dose arm", "visits completed", 61, noise=0.06),
        SeriesSpec("low-dose arm", "bilirubin", 0.7, "mg/dL", decimals=1, noise=0.05),
        SeriesSpec("low-dose arm", "visits completed", 58, noise=0.06),
        SeriesSpec("placebo arm", "mean AST", 24, "U/L", noise=0.04),
        SeriesSpec("placebo arm", "visits completed", 60, noise=0.06),
        SeriesSpec("enrolment", "participants dosed", 212, noise=0.02, role=Role.VOLUME),
        SeriesSpec("enrolment", "screen failures", 4, noise=0.25),
        SeriesSpec("central lab", "repeat assays", 6, noise=0.1, shape=Shape.BUMP, gain=1.6, role=Role.HERRING),
        SeriesSpec("central lab", "turnaround", 26, "hours", noise=0.05),
        SeriesSpec("concomitant medication", "acetaminophen users", 14, noise=0.05, role=Role.SUSPECT),
        SeriesSpec("investigator sites", "open data queries", 37, noise=0.1),
        SeriesSpec("pharmacy", "kits dispensed", 95, noise=0.06),
        SeriesSpec("cardiac monitoring", "mean QTc", 412, "ms", noise=0.01),
        SeriesSpec("protocol", "deviations", 2, noise=0.3),
    ),
    herring_start=EventSpec(
        "central lab switched chemistry reagent lot to {lot}",
        "switched chemistry reagent lot to {lot}",
        ("reagent lot {lot}", "switch to reagent lot {lot}", "switched reagent lot to {lot}"),
        section="changes",
    ),
    herring_end=EventSpec(
        "central lab restored the previous reagent lot after the {lot} review",
        "restored the previous reagent lot",
        ("previous reagent lot restored", "reverted to the previous reagent lot", "withdrew reagent lot {lot}"),
        section="changes",
    ),
    escalation=(
        EventSpec("Investigators held dosing for {value} high-dose participants with rising liver enzymes.", *_HELD),
        EventSpec("Site {site} held dosing for two high-dose participants pending repeat liver panels.", *_HELD),
        EventSpec("Medical monitor confirmed that sites held dosing per the hepatic stopping rules.", *_HELD),
        EventSpec("Two more sites held dosing in the high-dose arm this morning.", *_HELD),
    ),
    root_cause=EventSpec(
        "Pharmacology review for the monitoring board: ALT rises track velotrazine trough levels above {level} ng/mL, "
        "a dose-dependent effect seen only in the high-dose arm.",
        "dose-dependent effect seen only in the high-dose arm",
        ("dose-dependent", "dose dependent", "trough levels above {level} ng/mL", "only in the high-dose arm"),
    ),
    corroboration=EventSpec(
        "Pharmacokinetic substudy: high-dose participants who are slow CYP2C19 metabolisers reach {fold}-fold higher exposure.",
        "slow CYP2C19 metabolisers",
        ("CYP2C19", "slow metabolisers", "slow metabolizers", "{fold}-fold higher exposure"),
    ),
    phrases=StoryPhrases(
        system="the TRIAL-{trial} safety data",
        area="patient safety",
        consequence="liver enzyme alerts",
        primary="mean ALT in the high-dose arm",
        herring="the switch to reagent lot {lot}",
        volume="the number of participants dosed",
        suspect="concomitant acetaminophen use",
        cause="velotrazine causes a dose-dependent rise in ALT in the high-dose arm, amplified in slow CYP2C19 metabolisers",
        action="Pause dose escalation, move high-dose participants to the lower dose or add weekly liver panels, genotype "
        "for CYP2C19, and inform the data safety monitoring board and the regulators.",
        dependency_question="Is any laboratory value in the trial drifting away from its baseline?",
        why_question="What is behind the growing number of liver enzyme alerts?",
        escalation="dosing holds for rising liver enzymes",
    ),
    routine_notes=(
        "Monitoring visit at site {site} ended with no findings.",
        "Randomisation list reconciled with dispensing records.",
        "{n} informed consent forms re-signed after the leaflet update.",
        "Unblinded pharmacist confirmed kit accountability.",
        "Electronic diary compliance above {nn}% across arms.",
        "Sample shipment to the central lab left on dry ice.",
        "Safety narratives drafted for {n} expected events.",
        "Investigator meeting minutes circulated to sites.",
        "Patient safety call held with the site investigators.",
        "Source data verification completed for {nn} visits.",
        "Adverse event coding reviewed by the medical monitor.",
    ),
    routine_changes=(
        "activated site {site} for screening",
        "released protocol amendment {n} to ethics committees",
        "updated the electronic case report form edit checks",
        "lengthened the screening window by {n} days",
    ),
    themes=(CAFETERIA, LIBRARY_DESK, PARKING_GARAGE),
    variables={
        "trial": ("204", "311", "418"),
        "lot": ("R-2207", "R-3114", "R-4480"),
        "level": ("40", "55", "70"),
        "fold": ("2.1", "2.6", "3.0"),
        "site": ("103", "107", "112", "118"),
    },
)
