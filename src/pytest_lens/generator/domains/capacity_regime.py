"""Capacity regime change: a data campus quietly moves a substation onto a new, higher load baseline."""

from __future__ import annotations

from pytest_lens.generator.spec import DomainSpec, EventSpec, Role, SeriesSpec, Shape, StoryPhrases
from pytest_lens.generator.themes import BACKUP_VAULT, LIBRARY_DESK, WAREHOUSE_DOCK

__all__ = ["CAPACITY_REGIME"]

_TRANSFER = ("transferred feeder load to Harlow", ("load transfer to Harlow", "feeder load transferred", "moved feeder load to Harlow"))

CAPACITY_REGIME = DomainSpec(
    name="capacity_regime",
    code="cr",
    description="A data campus energises a second hall without a load study; a substation shifts to a new load regime.",
    series=(
        SeriesSpec(
            "Ridgeway substation", "evening peak", 84, "MW", decimals=1, noise=0.015, shape=Shape.DRIFT, gain=3.0, role=Role.PRIMARY
        ),
        SeriesSpec("Ridgeway substation", "overnight minimum", 31, "MW", noise=0.02, shape=Shape.DRIFT, gain=4.0),
        SeriesSpec("Ridgeway substation", "power factor", 0.96, decimals=2, noise=0.005),
        SeriesSpec("Ridgeway T2", "hot-spot temperature", 78, "C", noise=0.02, shape=Shape.CONSEQUENCE, gain=0.55, role=Role.SECONDARY),
        SeriesSpec("Ridgeway T2", "tap position", 9, noise=0.05),
        SeriesSpec("weather station", "afternoon high", 24.0, "C", decimals=1, noise=0.03, shape=Shape.BUMP, gain=0.4, role=Role.HERRING),
        SeriesSpec("weather station", "cooling hours", 5, noise=0.2),
        SeriesSpec("customer base", "residential connections", 41200, noise=0.002, role=Role.VOLUME),
        SeriesSpec("customer base", "commercial connections", 2310, noise=0.003),
        SeriesSpec("feeder F7", "faults", 2, noise=0.2, role=Role.SUSPECT),
        SeriesSpec("feeder F3", "loading", 62, "%", noise=0.03),
        SeriesSpec("Harlow substation", "peak demand", 57, "MW", noise=0.03),
        SeriesSpec("rooftop solar", "midday output", 19, "MW", noise=0.1),
        SeriesSpec("spot market", "settlement price", 62, "USD/MWh", noise=0.08),
        SeriesSpec("capacitor banks", "in service", 6, noise=0.08),
    ),
    herring_start=EventSpec(
        "Heat advisory {advisory} issued for the county",
        "Heat advisory {advisory} issued",
        ("heat advisory {advisory}", "advisory {advisory} issued", "heat wave advisory"),
        section="changes",
    ),
    herring_end=EventSpec(
        "Heat advisory {advisory} lifted as temperatures eased",
        "Heat advisory {advisory} lifted",
        ("advisory {advisory} lifted", "heat advisory was lifted", "end of heat advisory {advisory}"),
        section="changes",
    ),
    escalation=(
        EventSpec("Ridgeway T2 reached {value} C hot-spot; operators transferred feeder load to Harlow.", *_TRANSFER),
        EventSpec("Control centre transferred feeder load to Harlow for the evening peak again.", *_TRANSFER),
        EventSpec("Operators transferred feeder load to Harlow before dusk to protect Ridgeway T2.", *_TRANSFER),
        EventSpec("Dispatch transferred feeder load to Harlow while T2 sat at {value} C.", *_TRANSFER),
    ),
    root_cause=EventSpec(
        "Interconnection log: the Northgate data campus energised its second {size} MW hall on Ridgeway feeders without a load study.",
        "energised its second {size} MW hall",
        ("Northgate data campus", "second {size} MW hall", "data campus energised", "without a load study"),
    ),
    corroboration=EventSpec(
        "Revenue metering at Northgate shows a flat {draw} MW draw around the clock, unlike residential demand.",
        "flat {draw} MW draw around the clock",
        ("around the clock", "flat {draw} MW draw", "{draw} MW draw"),
    ),
    phrases=StoryPhrases(
        system="the Ridgeway distribution area",
        area="system load",
        consequence="transformer overheating at Ridgeway",
        primary="the Ridgeway evening peak",
        herring="heat advisory {advisory}",
        volume="residential connections",
        suspect="faults on feeder F7",
        cause="the Northgate data campus energised a second {size} MW hall on Ridgeway feeders without a load study, adding "
        "a constant load that moved the substation to a new, higher operating regime",
        action="Require a load study and staged energisation at Northgate, cap its draw until Ridgeway T2 is uprated or a new "
        "feeder from Harlow is built, and reset the area load forecast to the new baseline.",
        dependency_question="Is demand anywhere in the network moving to a new level?",
        why_question="What is driving the overheating at Ridgeway?",
        escalation="feeder load transfers to Harlow",
    ),
    routine_notes=(
        "Switching schedule for feeder maintenance agreed with field crews.",
        "Protection relay test at Harlow passed.",
        "{n} vegetation clearance jobs completed along feeder F3.",
        "Load forecast error within {n}% for the week.",
        "Oil sample from Ridgeway T1 sent for dissolved gas analysis.",
        "Demand response pilot enrolled {nn} more households.",
        "Thermal camera sweep of the Ridgeway switchyard showed no hot joints.",
        "Outage notices posted for planned work on feeder F7.",
        "SCADA historian backfilled after a brief link outage.",
        "Streetlight circuits switched to the dusk profile.",
        "System load forecast issued to the control centre.",
    ),
    routine_changes=(
        "recalibrated the Ridgeway revenue meters",
        "switched {n} streetlight circuits to smart control",
        "commissioned a capacitor bank at Harlow",
        "updated the feeder F3 protection settings",
    ),
    themes=(BACKUP_VAULT, WAREHOUSE_DOCK, LIBRARY_DESK),
    variables={
        "advisory": ("HA-12", "HA-17", "HA-23"),
        "size": ("40", "60", "80"),
        "draw": ("38", "55", "72"),
    },
)
