"""Environmental drift: leachate from a torn ash-basin liner creeps through groundwater toward a supply well."""

from __future__ import annotations

from pytest_lens.generator.spec import DomainSpec, EventSpec, Role, SeriesSpec, Shape, StoryPhrases
from pytest_lens.generator.themes import AIR_QUALITY, FLEET_FUEL, GREENHOUSE

__all__ = ["ENVIRONMENTAL_DRIFT"]

_CUT = ("cut back pumping at SW-2", ("pumping at SW-2 was cut back", "reduced pumping at SW-2", "SW-2 pumping cut", "pumping cut back"))

ENVIRONMENTAL_DRIFT = DomainSpec(
    name="environmental_drift",
    code="ed",
    description="Ash leachate escapes a torn basin liner; boron rises at a monitoring well, then sulfate at a supply well.",
    series=(
        SeriesSpec("MW-4", "boron", 210, "ug/L", noise=0.025, shape=Shape.DRIFT, gain=5.5, role=Role.PRIMARY),
        SeriesSpec("MW-4", "specific conductance", 640, "uS/cm", noise=0.03, shape=Shape.DRIFT, gain=1.2),
        SeriesSpec("SW-2", "sulfate", 58, "mg/L", noise=0.04, shape=Shape.CONSEQUENCE, gain=4.5, role=Role.SECONDARY),
        SeriesSpec("SW-2", "pumped", 3.1, "ML", decimals=1, noise=0.04),
        SeriesSpec("MW-1", "nitrate", 2.4, "mg/L", decimals=1, noise=0.06),
        SeriesSpec("MW-1", "static level", 12.4, "m", decimals=1, noise=0.01),
        SeriesSpec("MW-2", "chloride", 31, "mg/L", noise=0.04, shape=Shape.BUMP, gain=1.1, role=Role.HERRING),
        SeriesSpec("MW-2", "static level", 9.8, "m", decimals=1, noise=0.01),
        SeriesSpec("MW-3", "pH", 7.2, decimals=1, noise=0.01, role=Role.SUSPECT),
        SeriesSpec("MW-3", "dissolved iron", 0.21, "mg/L", decimals=2, noise=0.08),
        SeriesSpec("MW-5", "arsenic", 1.8, "ug/L", decimals=1, noise=0.06),
        SeriesSpec("MW-5", "lithium", 9, "ug/L", noise=0.06),
        SeriesSpec("rain gauge", "rainfall", 4.0, "mm", decimals=1, noise=0.12, role=Role.VOLUME),
        SeriesSpec("ash basin", "pond elevation", 211.6, "m", decimals=1, noise=0.001),
        SeriesSpec("ash basin", "seepage weir", 14, "L/min", noise=0.05),
    ),
    herring_start=EventSpec(
        "county crews began brine de-icing on Route {route} beside MW-2",
        "began brine de-icing on Route {route}",
        ("brine de-icing on Route {route}", "road de-icing on Route {route}", "Route {route} de-icing"),
        section="changes",
    ),
    herring_end=EventSpec(
        "brine de-icing on Route {route} ended for the season",
        "brine de-icing on Route {route} ended",
        ("de-icing on Route {route} ended", "end of the Route {route} de-icing", "de-icing ended"),
        section="changes",
    ),
    escalation=(
        EventSpec("Utility cut back pumping at SW-2 after sulfate reached {value} mg/L.", *_CUT),
        EventSpec("Operators cut back pumping at SW-2 again and blended its supply with the reservoir.", *_CUT),
        EventSpec("Utility kept the cut back pumping at SW-2 in place and sampled the distribution taps.", *_CUT),
        EventSpec("Utility cut back pumping at SW-2 to half rate while sulfate held at {value} mg/L.", *_CUT),
    ),
    root_cause=EventSpec(
        "Liner inspection at the ash basin's lower cell found a {length} m tear below the pond line.",
        "tear below the pond line",
        ("liner tear", "{length} m tear", "torn liner", "tear in the liner", "tear in the lower cell liner"),
    ),
    corroboration=EventSpec(
        "Dye trace released in the lower cell reached MW-4 after {days} days, confirming the leak path.",
        "reached MW-4 after {days} days",
        ("dye trace", "confirming the leak path", "dye reached MW-4"),
    ),
    phrases=StoryPhrases(
        system="the groundwater monitoring network",
        area="water quality",
        consequence="sulfate exceedances at supply well SW-2",
        primary="boron at MW-4",
        herring="the Route {route} brine de-icing",
        volume="rainfall",
        suspect="a pH drop at MW-3",
        cause="ash leachate is escaping through a tear in the lower cell liner of the ash basin and moving downgradient past "
        "MW-4 toward supply well SW-2",
        action="Drain and repair the lower cell liner, install interceptor pumping between the basin and SW-2, keep SW-2 "
        "pumping reduced or blended, and notify the regulator.",
        dependency_question="Is any monitoring well showing a gradual change in its chemistry?",
        why_question="Where is the sulfate reaching supply well SW-2 coming from?",
        escalation="cut-back pumping at SW-2",
    ),
    routine_notes=(
        "Quarterly sampling round started at the upgradient wells.",
        "Well caps and locks checked at MW-1 through MW-5.",
        "Bailers decontaminated between wells.",
        "{n} duplicate samples sent for laboratory quality assurance.",
        "Transducer at MW-2 downloaded; no gaps in the record.",
        "Basin freeboard inspected from the crest track.",
        "Chain-of-custody forms signed over to the courier.",
        "Field meter calibrated against standard buffers.",
        "Spring flow at the seep gauged at {n} litres per second.",
        "Purge volumes logged for every well.",
        "Water quality sonde at SW-2 rinsed and redeployed.",
    ),
    routine_changes=(
        "renewed the MW-5 sampler tubing",
        "resurveyed the basin crest markers",
        "updated the sampling plan with {n} extra analytes",
        "cleared vegetation around the MW-3 pad",
    ),
    themes=(AIR_QUALITY, GREENHOUSE, FLEET_FUEL),
    variables={
        "route": ("9", "14", "27", "31"),
        "length": ("2.5", "3", "4"),
        "days": ("4", "6", "9"),
    },
)
