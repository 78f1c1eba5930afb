"""The two MEME knowledge graphs (personal life, software project): entities, value pools, dependencies.

A small hand-written DAG per domain in the spirit of the MEME paper (Appendix B): root entities whose
change cascades to dependents, one "middle" dependent per root with dependents of its own (2-hop
chains), and orphan entities outside every chain for Tracking, Deletion, Aggregation and Exact Recall.
Every value is fictitious so no model can answer from parametric knowledge. ``@people`` pools draw
from the domain's shared list of person names (without replacement within an episode).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DOMAINS", "Domain", "Entity", "Root"]


@dataclass(frozen=True)
class Entity:
    """One entity: how it is stated, asked about and named in rules, and its value pool."""

    name: str
    noun: str
    statement: str
    question: str
    pool: tuple[str, ...]
    #: How a later value is announced (Tracking updates, root changes); defaults to ``statement``.
    update: str = ""

    def state(self, value: str) -> str:
        """The sentence introducing ``value``."""
        return self.statement.format(value=value)

    def announce(self, value: str) -> str:
        """The sentence announcing ``value`` as a change."""
        return (self.update or self.statement).format(value=value)


@dataclass(frozen=True)
class Root:
    """A root entity, its three dependents, and the middle dependent's two own dependents."""

    entity: str
    children: tuple[str, str, str]
    middle: str
    grandchildren: tuple[str, str]


@dataclass(frozen=True)
class Domain:
    """One domain's graph, orphan task pools, fillers and wording."""

    code: str
    name: str
    entities: dict[str, Entity]
    roots: tuple[Root, ...]
    people: tuple[str, ...]
    tracking: tuple[str, ...]
    deletion: tuple[str, ...]
    aggregation: tuple[tuple[str, tuple[str, str, str]], ...]
    exact_recall: Entity
    exact_recall_intro: str
    fillers: tuple[tuple[str, str], ...]

    def entity(self, name: str) -> Entity:
        """The entity called ``name``."""
        return self.entities[name]


def _entities(*items: Entity) -> dict[str, Entity]:
    return {item.name: item for item in items}


_PL_PEOPLE = (
    "Odile Brann", "Teo Vasquell", "Ruusa Nyqvist", "Emeric Fallow", "Priya Castellane", "Jonas Weirabbot",
    "Hessa Lindqvist", "Barnaby Oduya", "Mireille Strand", "Caspar Lowtanaka", "Idris Fenwick", "Noor Halvorsen",
    "Anselm Veyra", "Lucia Marwick", "Tobias Engstrand", "Hana Okalindt", "Ravi Castellmar", "Greta Solheim",
)  # fmt: skip

PERSONAL_LIFE = Domain(
    code="pl",
    name="personal_life",
    entities=_entities(
        Entity(
            "residence",
            "my home address",
            "I live in {value}.",
            "Where do I live?",
            ("Marlowe Heights", "Vessary Docks", "Tamsin Hill", "Calder Quarter", "Pellin Row", "North Averly"),
            update="I just moved to {value}.",
        ),
        Entity(
            "commute",
            "my commute",
            "My commute takes {value}.",
            "How long is my commute?",
            (
                "25 minutes by tram",
                "40 minutes on the Orlan line",
                "an hour by ferry",
                "15 minutes on foot",
                "35 minutes by bus",
                "50 minutes by regional rail",
            ),
        ),
        Entity(
            "gym",
            "my gym",
            "I train at {value}.",
            "Which gym do I train at?",
            (
                "Ironleaf Gym",
                "Brightwater Athletic Club",
                "Copperline Fitness",
                "Saltgrass Studio",
                "Harbourstone Pool",
                "Kestrel Climbing Hall",
            ),
        ),
        Entity(
            "grocer",
            "where I buy groceries",
            "I buy my groceries at {value}.",
            "Where do I buy my groceries?",
            (
                "Fennimore Market",
                "Quayside Grocer",
                "Olwen Fresh Foods",
                "Thistledown Coop",
                "Marigold Provisions",
                "Bellhaven Market Hall",
            ),
        ),
        Entity(
            "exercise_routine",
            "my exercise routine",
            "My exercise routine is {value}.",
            "What is my exercise routine?",
            (
                "lap swimming on Tuesdays",
                "bouldering twice a week",
                "spin classes at dawn",
                "rowing intervals on weekends",
                "kettlebell circuits after work",
                "yoga flow on Sundays",
            ),
        ),
        Entity("trainer", "my personal trainer", "My personal trainer is {value}.", "Who is my personal trainer?", ("@people",)),
        Entity(
            "employer",
            "my employer",
            "I work at {value}.",
            "Where do I work?",
            (
                "Quillfeather Analytics",
                "Brannock Vey Logistics",
                "Solvane Biotech",
                "Harrowgate Studios",
                "Tiberly Systems",
                "Okonde Freight",
            ),
            update="I have accepted a new job at {value}.",
        ),
        Entity(
            "office",
            "my office",
            "My office is at {value}.",
            "Where is my office?",
            (
                "14 Larkspur Yard",
                "the Glasswing Tower",
                "Ferrow Business Park",
                "22 Candlewick Street",
                "the Aldmere Exchange building",
                "Pier 6 Offices",
            ),
        ),
        Entity(
            "insurance",
            "my health insurance",
            "My health insurance is {value}.",
            "Which health insurance plan do I have?",
            (
                "Verdance Care Plus",
                "Northmark Health Silver",
                "Ambergrove Shield",
                "Cobalt Mutual Basic",
                "Lumen Wellcover",
                "Orchid Health Prime",
            ),
        ),
        Entity(
            "work_schedule",
            "my work schedule",
            "My work schedule is {value}.",
            "What is my work schedule?",
            (
                "four ten-hour days",
                "nine to five with remote Fridays",
                "an early shift from seven to three",
                "rotating late shifts",
                "compressed hours Monday to Thursday",
                "flexible core hours from eleven to four",
            ),
        ),
        Entity(
            "appointment",
            "my standing appointment",
            "My standing appointment is {value}.",
            "When is my standing appointment?",
            (
                "physiotherapy on Thursday mornings",
                "Spanish lessons on Monday evenings",
                "a dentist visit every second Friday",
                "counselling on Wednesdays at six",
                "piano lessons on Saturdays at ten",
                "a haircut on the first Tuesday of the month",
            ),
        ),
        Entity("dog_walker", "my dog walker", "My dog walker is {value}.", "Who walks my dog?", ("@people",)),
        Entity(
            "health_condition",
            "my health condition",
            "My health condition is {value}.",
            "What is my health condition?",
            ("lactose intolerance", "mild asthma", "high blood pressure", "seasonal migraines", "iron deficiency", "chronic tendonitis"),
            update="My doctor updated my diagnosis, it is now {value}.",
        ),
        Entity(
            "medication",
            "my medication",
            "My medication is {value}.",
            "Which medication do I take?",
            ("Thrynexol", "Velcamide", "Oristane", "Pulmavex", "Cardiquen", "Feralith"),
        ),
        Entity(
            "diet",
            "my dietary restriction",
            "My dietary restriction is {value}.",
            "What dietary restriction do I follow?",
            ("no dairy", "low sodium", "no aged cheese", "extra leafy greens", "no caffeine after noon", "low histamine"),
        ),
        Entity("specialist", "my specialist", "My specialist is {value}.", "Who is my specialist?", ("@people",)),
        Entity(
            "pharmacy",
            "my pharmacy",
            "I pick up prescriptions at {value}.",
            "Where do I pick up my prescriptions?",
            (
                "Greenvale Pharmacy",
                "Lindmark Apothecary",
                "Corvid Street Chemist",
                "Sablewood Dispensary",
                "Hollis Pharmacy",
                "Tarn Bridge Chemist",
            ),
        ),
        Entity(
            "refills",
            "my refill schedule",
            "My refill schedule is {value}.",
            "How often do I refill my prescription?",
            ("every 28 days", "every six weeks", "on the first of each month", "every 90 days", "every other Monday", "every 45 days"),
        ),
        Entity(
            "car",
            "my car",
            "I drive a {value}.",
            "Which car do I drive, and which cars did I drive before, in order from first to latest?",
            ("Zyvanta Sedan", "Korrin Hatchback", "Velo Marquette", "Astrel Wagon", "Duneglass Coupe", "Pemberly Roadster"),
            update="I traded in my car, I now drive a {value}.",
        ),
        Entity(
            "book",
            "the book I am reading",
            "The book I am reading is {value}.",
            "List every book I have been reading, in order from first to latest.",
            (
                "The Quorath Codex",
                "Salt and Lanterns",
                "The Ninefold Orchard",
                "Under Glass Rivers",
                "A Map of Small Fires",
                "The Ember Archivist",
            ),
            update="I finished that one, the book I am reading now is {value}.",
        ),
        Entity(
            "pet_name",
            "my cat's name",
            "My cat is called {value}.",
            "What is my cat called?",
            ("Biscuit Moonpaw", "Tamarind", "Quillon", "Saffron Tuesday", "Pebblesworth", "Miso Lantern"),
        ),
        Entity(
            "locker_code",
            "my gym locker code",
            "My gym locker code is {value}.",
            "What is my gym locker code?",
            ("4471", "9038", "2265", "7319", "5802", "6147"),
        ),
        Entity(
            "hobby",
            "my hobby",
            "My hobby is {value}.",
            "What is my hobby?",
            ("pottery", "linocut printing", "birdwatching", "model railway building", "urban sketching", "beekeeping"),
        ),
        Entity(
            "sport",
            "my sport",
            "I play {value}.",
            "Which sport do I play?",
            ("ultimate frisbee", "fencing", "squash", "open-water swimming", "trail running", "table tennis"),
        ),
        Entity(
            "club",
            "my club",
            "I am a member of {value}.",
            "Which club am I a member of?",
            (
                "the Calloway Chess Circle",
                "the Dunmore Choir",
                "the Riverside Book Guild",
                "the Lantern Street Improv Troupe",
                "the Westbrook Astronomy Society",
                "the Heron Lake Rowing Club",
            ),
        ),
        Entity(
            "trip",
            "my next trip",
            "My next trip is {value}.",
            "Where is my next trip?",
            (
                "a week on Isle Morvane",
                "a rail tour of the Esker Valley",
                "a weekend in Port Ysolde",
                "a hike along the Brannow Ridge",
                "a visit to the Tallis Salt Flats",
                "a ferry trip to Wrenholm",
            ),
        ),
        Entity(
            "family_event",
            "the family event",
            "The next family event is {value}.",
            "What is the next family event?",
            (
                "my cousin Ilka's wedding",
                "my grandmother's ninetieth birthday",
                "my nephew Aurel's graduation",
                "the Halvard family reunion",
                "my sister Vesna's housewarming",
                "my parents' ruby anniversary",
            ),
        ),
        Entity(
            "concert",
            "the concert",
            "I have tickets for {value}.",
            "Which concert do I have tickets for?",
            (
                "the Glass Orchard quartet",
                "Mirela Stoven live",
                "the Copper Tide festival",
                "the Northlight Choir gala",
                "Oskar Velde and the Harbour Band",
                "the Lumen Strings recital",
            ),
        ),
    ),
    roots=(
        Root("residence", ("commute", "gym", "grocer"), "gym", ("exercise_routine", "trainer")),
        Root("employer", ("office", "insurance", "work_schedule"), "work_schedule", ("appointment", "dog_walker")),
        Root("health_condition", ("medication", "diet", "specialist"), "medication", ("pharmacy", "refills")),
    ),
    people=_PL_PEOPLE,
    tracking=("car", "book"),
    deletion=("pet_name", "locker_code"),
    aggregation=(
        ("What do I do in my free time?", ("hobby", "sport", "club")),
        ("What is coming up in my calendar?", ("trip", "family_event", "concert")),
    ),
    exact_recall=Entity(
        "life_philosophy",
        "my life philosophy",
        "My life philosophy, word for word: {value}",
        "What is my life philosophy, word for word?",
        (
            "plant the slow trees first, water them anyway, and let the shade belong to whoever sits there next",
            "measure twice, forgive once, and leave every campsite with one more match than you found",
            "say the kind thing early, the true thing clearly, and the clever thing only if there is time left over",
            "a borrowed ladder goes back cleaner than it came, and so does a borrowed promise",
            "walk the long way home on Thursdays, because the short way has never once surprised me",
            "keep one window open in every plan, since the weather always knows something the map does not",
        ),
    ),
    exact_recall_intro="Please remember this exactly as I say it.",
    fillers=(
        ("How do I keep basil alive on a windowsill?", "Give it four to six hours of light and water when the top of the soil feels dry."),
        ("What is a good way to fold fitted sheets?", "Tuck the corners into each other, lay it flat and fold it into a rectangle."),
        ("Can you suggest a quick lentil soup?", "Simmer red lentils with onion, garlic, cumin and stock for twenty minutes, then blend."),
        ("How long should I steep green tea?", "About two to three minutes in water just below boiling keeps it from turning bitter."),
        ("Any tips for learning to juggle?", "Start with one ball tossed hand to hand at eye level, then add the second ball."),
        ("Why do onions make my eyes water?", "Cutting them releases a volatile compound that irritates the eyes; a sharp knife helps."),
        (
            "What is a simple stretch for a stiff neck?",
            "Tilt your ear gently toward your shoulder and hold for twenty seconds on each side.",
        ),
        ("How do I get candle wax out of a tablecloth?", "Harden it with ice, scrape off what you can, then iron it between paper towels."),
        ("Which houseplants tolerate low light?", "Snake plants, pothos and cast iron plants cope well with dim corners."),
        (
            "How can I stop my bread from going stale so fast?",
            "Keep it cut side down on a board or freeze slices and toast them as needed.",
        ),
        (
            "What is a good warm up before a long walk?",
            "A few minutes of ankle circles, leg swings and an easy pace for the first stretch.",
        ),
        ("How do I remove a stripped screw?", "Press a wide rubber band between the screwdriver and the screw head for extra grip."),
    ),
)

_SW_PEOPLE = (
    "Jihoon Ryu", "Maren Solberg", "Tavi Okonreyes", "Ilse Varga", "Dorian Pell", "Kasimir Olan",
    "Sunniva Harth", "Bastian Quell", "Amara Lindgren", "Yusuf Terrano", "Elodie Farrant", "Mikkel Dane",
    "Zofia Kestrel", "Rowan Ashcombe", "Lior Benhadi", "Freya Tollund", "Ciaran Moss", "Nadia Orvell",
)  # fmt: skip

SOFTWARE_PROJECT = Domain(
    code="sw",
    name="software_project",
    entities=_entities(
        Entity(
            "team_lead",
            "the team lead",
            "Our team lead is {value}.",
            "Who is our team lead?",
            ("@people",),
            update="{value} is our new team lead.",
        ),
        Entity(
            "report_recipient",
            "the weekly report recipient",
            "The weekly report goes to {value}.",
            "Who receives the weekly report?",
            ("@people",),
        ),
        Entity(
            "escalation_contact",
            "the escalation contact",
            "Our escalation contact is {value}.",
            "Who is our escalation contact?",
            ("@people",),
        ),
        Entity("code_reviewer", "the code reviewer", "Our code reviewer is {value}.", "Who reviews our code?", ("@people",)),
        Entity("release_approver", "the release approver", "Releases are approved by {value}.", "Who approves our releases?", ("@people",)),
        Entity(
            "review_target",
            "the review turnaround target",
            "Our review turnaround target is {value}.",
            "What is our review turnaround target?",
            ("four working hours", "one business day", "two business days", "the same afternoon", "36 hours", "48 hours"),
        ),
        Entity(
            "database",
            "the database",
            "Our database is {value}.",
            "Which database do we use?",
            ("Crysthene DB", "Vaultix SQL", "Orrinite Store", "Pelagos DB", "Quorra Graph", "Saltmere KV"),
            update="We migrated the database to {value}.",
        ),
        Entity(
            "orm",
            "the ORM library",
            "Our ORM library is {value}.",
            "Which ORM library do we use?",
            ("Loomquery", "Brisk ORM", "Tessellate", "Quarrymap", "Petalbind", "Strata ORM"),
        ),
        Entity(
            "connection_string",
            "the connection string",
            "The connection string is {value}.",
            "What is our database connection string?",
            (
                "crys://dbmain.internal:7411/app",
                "vaultix://core.lan:5510/prod",
                "orrin://store01:9200/main",
                "pelagos://pg-east:6432/app",
                "quorra://graph.lan:8182/core",
                "saltkv://kv3.internal:7700/0",
            ),
        ),
        Entity(
            "backups",
            "the backup schedule",
            "Backups run {value}.",
            "When do our database backups run?",
            (
                "nightly at 02:30",
                "every six hours",
                "hourly on weekdays",
                "twice daily at 03:00 and 15:00",
                "nightly at 01:15",
                "every four hours",
            ),
        ),
        Entity(
            "model_syntax",
            "the model syntax",
            "Models are declared with {value}.",
            "How do we declare models?",
            (
                "decorated dataclasses",
                "YAML schema files",
                "fluent builder chains",
                "annotated record types",
                "SQL-first templates",
                "class attribute descriptors",
            ),
        ),
        Entity(
            "migration_tool",
            "the migration tool",
            "Our migration tool is {value}.",
            "Which migration tool do we use?",
            ("Shiftwright", "Migrately", "Tidemark", "Delta Loom", "Keelstep", "Rungrade"),
        ),
        Entity(
            "deploy_target",
            "the deploy target",
            "We deploy to {value}.",
            "Where do we deploy?",
            ("Narvex Cloud", "Hollowpine Hosting", "Stratavane", "Ebbridge Compute", "Kelvara Edge", "Monocline PaaS"),
            update="We are moving deployments to {value}.",
        ),
        Entity(
            "monitoring_url",
            "the monitoring dashboard",
            "Monitoring lives at {value}.",
            "Where is our monitoring dashboard?",
            (
                "mon.narvik-ops.io/main",
                "watch.hollowpine.dev/app",
                "glance.stratavane.net/core",
                "pulse.ebbridge.io/prod",
                "eyes.kelvara.dev/board",
                "scope.monocline.app/live",
            ),
        ),
        Entity(
            "staging_url",
            "the staging URL",
            "Staging is at {value}.",
            "What is our staging URL?",
            (
                "staging.qelvar.app",
                "pre.tessarine.dev",
                "stage.morrowkit.io",
                "rehearse.ulvane.net",
                "beta.corvasso.app",
                "preview.haldane-ops.io",
            ),
        ),
        Entity(
            "ci_config",
            "the CI config",
            "Our CI config is {value}.",
            "Which CI configuration file do we use?",
            (
                "pipeline/velt.yml",
                "ci/hollow-build.toml",
                "build/strata-ci.yaml",
                "ops/ebb-pipeline.yml",
                "ci/kelvara.json",
                "deploy/monocline-ci.yml",
            ),
        ),
        Entity(
            "deploy_command",
            "the deploy command",
            "We deploy with {value}.",
            "What command do we use to deploy?",
            ("velt ship --prod", "hpx release main", "strata push live", "ebbctl roll out", "kel deploy --edge", "mono launch stable"),
        ),
        Entity(
            "base_image",
            "the base image",
            "Our base image is {value}.",
            "Which base image do we use?",
            (
                "harbor/rune-slim:3.2",
                "quay/ostra-base:11",
                "hub/ferrite-min:2024",
                "reg/lumen-core:7",
                "hub/tallow-alpine:5",
                "reg/birch-distroless:9",
            ),
        ),
        Entity(
            "package_manager",
            "our package manager",
            "Our package manager is {value}.",
            "Which package managers have we used, in order from first to latest?",
            ("Pakrat", "Bundlewise", "Crateful", "Quiver PM", "Nestly", "Parcelo"),
            update="We switched our package manager to {value}.",
        ),
        Entity(
            "secret_manager",
            "our secret manager",
            "Our secret manager is {value}.",
            "Which secret managers have we used, in order from first to latest?",
            ("Lockvane", "Cipherloft", "Keystead", "Vaultling", "Sigilbox", "Hushcrate"),
            update="We replaced the secret manager, we now use {value}.",
        ),
        Entity(
            "log_drain",
            "our log drain endpoint",
            "The log drain endpoint is {value}.",
            "What is our log drain endpoint?",
            (
                "stream.velturis.io/aurora",
                "ingest.polvane.net/tide",
                "sink.arkhollow.dev/ember",
                "logs.quintarra.io/nova",
                "drain.selvik.app/gale",
                "collect.morrowind-ops.io/vale",
            ),
        ),
        Entity(
            "incident_channel",
            "our private incident channel",
            "Our private incident channel is {value}.",
            "What is our private incident channel?",
            ("ember-war-room", "quiet-storm-ops", "red-lantern-desk", "tidewatch-incidents", "nightjar-oncall", "ashfall-response"),
        ),
        Entity(
            "branch_strategy",
            "the branch strategy",
            "Our branch strategy is {value}.",
            "What is our branch strategy?",
            (
                "short-lived feature branches",
                "release trains every fortnight",
                "trunk with feature flags",
                "forked topic branches",
                "stacked change sets",
                "milestone branches",
            ),
        ),
        Entity(
            "default_branch",
            "the default branch",
            "Our default branch is called {value}.",
            "What is our default branch?",
            ("mainline", "trunk-live", "stable-root", "keel", "spine", "headwater"),
        ),
        Entity(
            "review_policy",
            "the review policy",
            "Our review policy is {value}.",
            "What is our review policy?",
            (
                "two approvals for schema changes",
                "one approval plus green checks",
                "pair review for anything in payments",
                "owner approval for public interfaces",
                "a second reviewer for migrations",
                "review within the same day",
            ),
        ),
        Entity(
            "meeting_day",
            "the planning day",
            "Sprint planning happens on {value}.",
            "When is sprint planning?",
            (
                "Monday mornings",
                "Tuesday afternoons",
                "Wednesday after lunch",
                "Thursday at ten",
                "alternate Fridays",
                "the first Monday of the sprint",
            ),
        ),
        Entity(
            "standup_format",
            "the standup format",
            "Our standup format is {value}.",
            "What is our standup format?",
            (
                "async notes in a thread",
                "a ten minute video call",
                "walk the board right to left",
                "three questions per person",
                "a written digest at nine",
                "blockers first, then demos",
            ),
        ),
        Entity(
            "release_cadence",
            "the release cadence",
            "Our release cadence is {value}.",
            "What is our release cadence?",
            (
                "every second Wednesday",
                "continuous on merge",
                "monthly on the first Tuesday",
                "weekly on Thursdays",
                "twice a sprint",
                "at the end of each milestone",
            ),
        ),
    ),
    roots=(
        Root(
            "team_lead", ("report_recipient", "escalation_contact", "code_reviewer"), "code_reviewer", ("release_approver", "review_target")
        ),
        Root("database", ("orm", "connection_string", "backups"), "orm", ("model_syntax", "migration_tool")),
        Root("deploy_target", ("monitoring_url", "staging_url", "ci_config"), "ci_config", ("deploy_command", "base_image")),
    ),
    people=_SW_PEOPLE,
    tracking=("package_manager", "secret_manager"),
    deletion=("log_drain", "incident_channel"),
    aggregation=(
        ("What are our source-control conventions?", ("branch_strategy", "default_branch", "review_policy")),
        ("How does our team's sprint rhythm work?", ("meeting_day", "standup_format", "release_cadence")),
    ),
    exact_recall=Entity(
        "error_log",
        "the error log",
        "Here is the error log, keep it verbatim: {value}",
        "What is the exact error log I asked you to keep?",
        (
            "panic: shard 7 lost quorum at epoch 4412 with code QX-93 on node vel-2",
            "fatal: ledger checksum 0x9f3a mismatch after replay 118 on worker orrin-5",
            "error E4471: cursor drift of 37ms exceeded window on stream tidewatch-2",
            "oom-kill: process halden-indexer used 7.3GiB of 6GiB limit during batch 220",
            "timeout: handshake with keystead-proxy stalled after 12 retries on port 8843",
            "segfault at 0x00007f2e in libquarry.so during compaction pass 19 of 24",
        ),
    ),
    exact_recall_intro="Please store this exactly, character for character.",
    fillers=(
        (
            "How do I reverse a list in Python without changing the original?",
            "Use the reversed builtin or slicing with a negative step to get a new list.",
        ),
        (
            "What does a 418 status code mean?",
            "It is the joke teapot status from an April Fools specification; real servers rarely send it.",
        ),
        (
            "How can I count lines in a text file from the shell?",
            "Pipe it to wc with the lines flag, or use awk to print the final record number.",
        ),
        (
            "What is the difference between a tuple and a list?",
            "Tuples are immutable and hashable when their items are, lists can change in place.",
        ),
        ("How do I format a float with two decimals in JavaScript?", "Call toFixed with 2, which returns a string rounded to two places."),
        (
            "Why is my regular expression so slow on long inputs?",
            "Nested quantifiers can backtrack exponentially; make the pattern more specific.",
        ),
        (
            "How do I pretty print a JSON file in the terminal?",
            "Pipe it through python with the json.tool module, or use jq with a dot filter.",
        ),
        ("What is memoization?", "Caching a pure function's results by its arguments so repeated calls return instantly."),
        ("How do I find which process is listening on a port?", "Use lsof with the port, or ss with the listening and process flags."),
        ("What is a good name for a boolean variable?", "Phrase it as a yes or no question, such as is_ready or has_children."),
        ("How do I split a string on whitespace in Go?", "strings.Fields splits on any run of whitespace and drops empty parts."),
        ("Is recursion slower than a loop?", "Often slightly, because of call overhead, and deep recursion can exhaust the stack."),
    ),
)

#: The domains by code.
DOMAINS: dict[str, Domain] = {PERSONAL_LIFE.code: PERSONAL_LIFE, SOFTWARE_PROJECT.code: SOFTWARE_PROJECT}
