"""Five people and four weeks of their daily notes, written by hand for the dreaming benchmark.

Every line a persona writes carries a label the scorer uses: a fact worth keeping (with its
versions when it changes mid-month), noise (everyday lines, some of them sharing words with a
fact so that search returns them next to it), junk (commands, SQL, JSON, questions, greetings,
URLs …), a one-day burst of questions, or a line the user later deletes. The questions are what
the person would type; the query is what the agent would pass to `memory_search`.

Days are 1..28 (day 1 = Monday 2026-03-02).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Ask:
    message: str  # what the user types (active recall searches with it)
    query: str  # what the agent passes to memory_search


@dataclass(frozen=True)
class Fact:
    """Worth keeping. `versions`: (day written, text) in order; the last is the current value.
    `restated`: (day, version index, text) — the same fact written again later, maybe reworded."""

    id: str
    versions: tuple[tuple[int, str], ...]
    asks: tuple[Ask, ...]
    days: tuple[int, ...]
    restated: tuple[tuple[int, int, str], ...] = ()


@dataclass(frozen=True)
class Burst:
    """A line everyone asks about on one day, then (nearly) never again: not worth keeping."""

    id: str
    day: int
    text: str
    ask_day: int
    asks: tuple[Ask, ...]
    stray: tuple[int, Ask] | None = None  # one more question on another day


@dataclass(frozen=True)
class Deletion:
    """A line the user deletes from the note (plans cancelled): never to be promoted."""

    id: str
    day: int
    text: str
    deleted_day: int
    asks: tuple[Ask, ...]
    days: tuple[int, ...]


@dataclass(frozen=True)
class Move:
    """The user tidies an older note, which shifts the lines of the facts in it.
    kind: drop_noise (delete the first everyday line) | heading_before (insert a heading above `target`)
    | to_end (move `target` to the end of the note)."""

    day: int
    note_day: int
    kind: str
    target: str = ""
    heading: str = ""


@dataclass(frozen=True)
class Verdict:
    """A note line that contradicts a line of the user's own in MEMORY.md (there from day 1):
    Deep must queue it "to verify", never promote it by itself; the next morning the user accepts
    it (the new value replaces the line) or rejects it (MEMORY.md keeps the line, the note's value
    is never promoted nor queued again)."""

    id: str
    memory_line: str  # the user's own line in MEMORY.md
    day: int  # the day the note line is written
    text: str  # the note line
    asks: tuple[Ask, ...]
    days: tuple[int, ...]
    action: str  # accept | reject


@dataclass(frozen=True)
class Persona:
    name: str
    user_md: str
    facts: tuple[Fact, ...]
    bursts: tuple[Burst, ...]
    deletions: tuple[Deletion, ...]
    moves: tuple[Move, ...]
    noise: tuple[str, ...]  # spread over the month, about two a day
    decoys: tuple[tuple[int, str], ...]  # noise that shares words with a fact, on a given day
    junk: tuple[tuple[int, str], ...]
    oneoffs: tuple[tuple[int, Ask], ...] = field(default=())  # questions about nothing in particular
    verdicts: tuple[Verdict, ...] = field(default=())
    held_out: bool = False  # written after tuning ended and never used for it: only measured


def A(message: str, query: str) -> Ask:
    return Ask(message, query)


MAYA = Persona(
    name="maya",
    user_md="# User\n\n- Maya Chen, engineering lead on the payments team in Manchester.\n",
    facts=(
        Fact("review", ((1, "Every change to the payments service needs two reviewers, one of them from the risk team."),),
             (A("How many reviewers does a payments change need?", "payments service review rule"),
              A("Who has to approve my PR to the payments service?", "payments PR approval"),
              A("Can I merge a payments change with one approval?", "payments change approvals"),
              A("remind me of the code review policy for payments", "code review policy payments")),
             (2, 4, 8, 11, 15, 19, 24)),
        Fact("vpn", ((2, "The staging database only accepts connections over the office VPN."),),
             (A("Why can't I reach the staging database from home?", "staging database from home"),
              A("Do I need the VPN for the staging DB?", "VPN staging database"),
              A("staging db connection refused, what am I missing?", "staging db connection refused"),
              A("how do I connect to staging postgres", "connect staging postgres")),
             (3, 6, 10, 13, 17, 22, 26),
             restated=((18, 0, "Reminder: the staging database only accepts connections over the office VPN."),)),
        Fact("pgport", ((3, "The reporting Postgres listens on port 5433, not the default 5432."),),
             (A("What port is the reporting database on?", "reporting database port"),
              A("psql to reporting keeps failing on 5432", "reporting postgres port"),
              A("which port for the reporting replica", "reporting replica port")),
             (5, 9, 12, 18, 23, 27)),
        Fact("launch", ((4, "The card payments launch is planned for 14 April."),),
             (A("When do card payments go live?", "card payments launch date"),
              A("what's the launch date for card payments", "card payments launch"),
              A("are we still on track for the payments launch?", "payments launch plan")),
             (5, 7, 12, 16, 20, 25)),
        Fact("oncall", ((5, "I'm on call the first week of every month; Ravi covers the second week."),),
             (A("Am I on call next week?", "my on-call weeks"),
              A("who covers on-call in the second week?", "second week on-call cover"),
              A("what's the on-call rota", "on-call rota")),
             (6, 9, 14, 21, 26)),
        Fact("manager", ((1, "My manager is Dana Whitfield; our one-to-one is on Thursdays at 14:00."),),
             (A("When is my one-to-one with Dana?", "one-to-one with Dana"),
              A("what day is my 1:1", "1:1 day"),
              A("who is my manager again", "my manager")),
             (3, 10, 17, 24, 27)),
        Fact("parking", ((8, "Staff park on level 5 of the car park; level 3 is reserved for visitors."),),
             (A("Where do staff park?", "staff parking level"),
              A("Can I park on level 3?", "car park level 3"),
              A("which car park level is ours", "car park level staff")),
             (9, 13, 18, 25)),
        Fact("standup", ((1, "Team standup is at 9:30 in the Kelvin room."),
                         (13, "Standup moves to 10:00 from Monday, still in the Kelvin room.")),
             (A("What time is standup tomorrow?", "standup time"),
              A("where is standup held", "standup room"),
              A("is standup still at half nine?", "standup half nine"),
              A("when's the team standup", "team standup")),
             (2, 4, 7, 9, 14, 16, 19, 22, 25, 27),
             restated=((20, 1, "Team standup is at 10:00 in the Kelvin room."),)),
        Fact("deploy", ((2, "Production deploys happen on Tuesdays after standup."),
                        (15, "Production deploys happen on Thursdays after standup.")),
             (A("Which day do we deploy to production?", "production deploy day"),
              A("can I ship the fix on Tuesday?", "deploy Tuesday"),
              A("when is the next release window", "release window"),
              A("what's our deploy schedule", "deploy schedule")),
             (3, 5, 8, 10, 16, 18, 21, 23, 26)),
    ),
    bursts=(
        Burst("hotel", 9, "The conference hotel is the Midland; booking reference MX-20417.", 10,
              (A("what's the hotel booking reference", "hotel booking reference"),
               A("which hotel for the conference", "conference hotel"),
               A("Midland booking ref?", "Midland booking"),
               A("did I book the hotel for the conference", "hotel booking conference"),
               A("where am I staying for the conference", "conference stay"),
               A("hotel confirmation number", "hotel confirmation number"),
               A("is the hotel near the venue", "hotel venue"),
               A("what name is the hotel booked under", "hotel booked name")),
              stray=(17, A("conference hotel again?", "conference hotel"))),
    ),
    deletions=(
        Deletion("dinner", 6, "Team dinner is at Luigi's on Friday at 19:30.", 8,
                 (A("where is the team dinner", "team dinner"),
                  A("what time is the team dinner on Friday", "team dinner time"),
                  A("is the team dinner still on?", "team dinner")),
                 (6, 7, 9)),
    ),
    moves=(
        Move(12, 2, "drop_noise"),
        Move(19, 3, "heading_before", target="The reporting Postgres listens on port 5433, not the default 5432.",
             heading="## Databases"),
        Move(21, 1, "to_end", target="Team standup is at 9:30 in the Kelvin room."),
    ),
    noise=(
        "Lunch at the Vietnamese place on Oldham Street; the pho was great.",
        "Rain all day, took the tram instead of cycling.",
        "Jonas brought croissants for the team.",
        "Printer on the second floor jammed again.",
        "Read half of the incident review; it is long.",
        "Booked a haircut for Saturday morning.",
        "Gym at 7, legs day.",
        "Forgot my badge, reception printed a temporary one.",
        "The kids' school play went well.",
        "New coffee machine on our floor makes terrible espresso.",
        "Spent the afternoon in budget spreadsheets.",
        "Good chat with Priti about her career plans.",
        "Heating in the office is broken again.",
        "Watched the match in the evening, 2-1 in the end.",
        "Ordered a new keyboard, the space bar on the old one sticks.",
        "Train to London was delayed by 20 minutes.",
        "Team retro: people want fewer meetings.",
        "Fire alarm test at 11, everyone ignored it.",
        "Bought flowers for Mum's visit.",
        "Interviewed a backend candidate, strong on SQL.",
        "Long queue at the canteen, gave up and had a sandwich.",
        "Sorted out the expenses from the Leeds trip.",
        "Headache in the afternoon, too much screen time.",
        "Lovely sunset over the canal on the walk home.",
        "Finally cleared my inbox.",
        "Tried the new ramen place near Piccadilly, too salty.",
        "Priti's demo of the fraud dashboard was impressive.",
        "Started reading a book about distributed systems.",
        "Neighbour's dog barked all night.",
        "Planning poker took an hour for six tickets.",
        "Need new running shoes.",
        "The lift was out of order, took the stairs to the 6th floor.",
        "Bought a birthday card for Jonas.",
        "All-hands was mostly about the office move.",
        "Cycled in, the weather was finally dry.",
        "Frozen pizza for dinner, no energy to cook.",
        "Paired with Ravi on the flaky integration test.",
        "Quiet day, mostly writing the quarterly plan.",
        "Someone left fish in the office microwave again.",
        "Caught up with an old friend from university.",
    ),
    decoys=(
        (3, "The laundrette on Oak Street changed to card payments only."),
        (4, "Ravi is back from holiday on Monday."),
        (5, "The Kelvin room projector needs an HDMI adapter."),
        (6, "Dana shared a good podcast about engineering management."),
        (8, "Staging felt slow all afternoon; nobody knows why."),
        (10, "Reporting dashboards were late again this morning."),
        (11, "The risk team offsite is in May."),
        (13, "The car park barrier was stuck again, had to call security."),
        (14, "Tuesday's deploy went smoothly for once."),
        (16, "Card payments at the canteen are finally working."),
        (19, "Ravi wants to swap on-call weeks in April."),
        (21, "The VPN client asked me to update it again."),
    ),
    junk=(
        (3, "pg_dump -Fc reporting > /tmp/reporting.dump"),
        (5, "https://grafana.internal.example/d/payments-latency"),
        (6, "What time is standup tomorrow?"),
        (7, '{"retries": 3, "timeout_ms": 2500, "circuit_breaker": true}'),
        (10, "Good morning! Hope the deploy goes well today."),
        (11, "SELECT count(*) FROM payments WHERE status = 'failed' AND created_at > now() - interval '1 day';"),
        (12, "Thanks Dana!"),
        (14, "kubectl -n payments get pods -l app=gateway"),
        (15, "Is the staging VPN down again?"),
        (16, "./scripts/release.sh --tag v2.3.1"),
        (18, "make deploy ENV=staging"),
        (20, "TODO"),
        (22, "retries: 3"),
        (23, "psql -h reporting -p 5433 -U analyst reporting"),
    ),
    oneoffs=(
        (2, A("what did Jonas bring in?", "Jonas brought")),
        (4, A("where did I have pho?", "pho lunch")),
        (7, A("when is my haircut", "haircut")),
        (8, A("what did the retro say", "team retro")),
        (11, A("who did I interview", "interview candidate")),
        (12, A("what was the all-hands about", "all-hands")),
        (15, A("did I sort out the Leeds expenses", "Leeds expenses")),
        (16, A("what book am I reading", "book distributed systems")),
        (19, A("who did I pair with on the flaky test", "flaky integration test")),
        (23, A("what happened with the lift", "lift out of order")),
        (26, A("what was Priti's demo", "Priti demo")),
    ),
)


TOM = Persona(
    name="tom",
    user_md="# User\n\n- Tom Okafor, dad of Ben (7) and Amara (10), lives in Bristol.\n",
    facts=(
        Fact("peanut", ((1, "Ben is allergic to peanuts; his EpiPen is in the blue kitchen drawer."),),
             (A("Where's Ben's EpiPen?", "Ben EpiPen"),
              A("what is Ben allergic to", "Ben allergy"),
              A("can Ben eat satay chicken at the party?", "Ben peanut satay"),
              A("what should I tell the babysitter about Ben's allergy", "Ben allergy babysitter")),
             (2, 5, 9, 13, 17, 22, 26),
             restated=((14, 0, "Ben is allergic to peanuts, his EpiPen is in the blue kitchen drawer."),)),
        Fact("pickup", ((2, "School pickup is at 15:15; the side gate opens at 15:10."),),
             (A("What time is school pickup?", "school pickup time"),
              A("when does the side gate open", "school side gate"),
              A("am I late for pickup if I get there at 15:20", "pickup time school")),
             (3, 6, 10, 14, 20, 24)),
        Fact("dentist", ((3, "The family dentist is Dr. Achebe at the Gloucester Road practice."),),
             (A("Who's our dentist?", "family dentist"),
              A("where is the dentist's practice", "dentist practice address"),
              A("need to book Amara a check-up, which dentist", "dentist check-up")),
             (4, 8, 15, 21, 27)),
        Fact("wifi", ((1, "The wifi password is on the sticker under the router in the hallway."),),
             (A("What's the wifi password?", "wifi password"),
              A("guests are asking for the wifi", "guest wifi"),
              A("where do I find the router password", "router password")),
             (2, 7, 12, 19, 25)),
        Fact("bins", ((4, "Bins go out on Wednesday morning; recycling is every other week."),),
             (A("Which day are the bins collected?", "bin collection day"),
              A("is it recycling week?", "recycling week"),
              A("when do the bins go out", "bins out")),
             (5, 10, 16, 23)),
        Fact("grandma", ((6, "Grandma Ngozi's birthday is on 3 August; she prefers lilies to roses."),),
             (A("When is Grandma's birthday?", "Grandma birthday"),
              A("what flowers does Grandma like", "Grandma flowers"),
              A("gift ideas for Grandma Ngozi", "Grandma Ngozi gift")),
             (7, 11, 18, 24)),
        Fact("boiler", ((5, "The boiler is serviced by Hughes Heating every October; the engineer is Gareth."),),
             (A("Who services the boiler?", "boiler service"),
              A("the boiler is making a noise, who do I call", "boiler engineer"),
              A("when is the boiler service due", "boiler service due")),
             (8, 12, 19, 26)),
        Fact("phone", ((3, "Dad's mobile number is 07700 900123."),
                       (15, "Dad has a new mobile number: 07700 900456.")),
             (A("What's Dad's number?", "Dad mobile number"),
              A("I need to text Dad, what's his mobile", "Dad mobile"),
              A("call Dad", "Dad phone number")),
             (4, 7, 11, 14, 16, 18, 21, 25, 27)),
        Fact("address", ((1, "Our address is 22 Cotham Road, Bristol BS6 6DP."),
                         (16, "We moved to 8 Elm Grove, Redland, Bristol BS6 7QT on 16 March.")),
             (A("What's our home address?", "home address"),
              A("what postcode do I put on the school form", "home postcode"),
              A("where do we live, for the delivery", "delivery address")),
             (2, 6, 9, 13, 17, 20, 23, 26, 28),
             restated=((22, 1, "Our address is 8 Elm Grove, Redland, Bristol BS6 7QT."),)),
        Fact("swim", ((2, "Amara's swimming lessons are on Saturdays at 9:00 at Horfield pool."),
                      (19, "Amara's swimming lessons are on Sundays at 10:00 at Horfield pool.")),
             (A("When is Amara's swimming?", "Amara swimming lesson"),
              A("what time do we need to be at the pool", "pool time"),
              A("is swimming this weekend saturday or sunday", "swimming weekend day")),
             (3, 6, 10, 13, 20, 22, 25, 27)),
    ),
    bursts=(
        Burst("plumber", 11, "The plumber said the leak comes from the washing machine hose, not the pipe.", 12,
              (A("what did the plumber say", "plumber"),
               A("where is the leak coming from", "leak source"),
               A("is it the pipe or the hose", "leak pipe hose"),
               A("do I need a new washing machine hose", "washing machine hose"),
               A("what's wrong with the washing machine", "washing machine leak"),
               A("did the plumber find the leak", "plumber leak"),
               A("should I call the insurance about the leak", "leak insurance"))),
    ),
    deletions=(
        Deletion("parents", 4, "Parents' evening is on Tuesday 10 March at 18:00.", 7,
                 (A("when is parents' evening", "parents evening"),
                  A("what time is parents evening on Tuesday", "parents evening time")),
                 (4, 5, 8)),
        Deletion("party", 12, "Leo's party is at the trampoline park on Saturday at 14:00.", 14,
                 (A("where is Leo's party", "Leo party"),
                  A("what time is the trampoline party", "trampoline party time")),
                 (12, 13, 15)),
    ),
    moves=(
        Move(10, 1, "drop_noise"),
        Move(17, 2, "heading_before", target="Amara's swimming lessons are on Saturdays at 9:00 at Horfield pool.",
             heading="## Kids"),
    ),
    noise=(
        "Made lasagne, the kids ate half of it.",
        "The car needs washing.",
        "Ben's friend Leo came over to play.",
        "Rainy walk to school, everyone soaked.",
        "Fixed the squeaky door on the bathroom.",
        "Amara finished her book about volcanoes.",
        "Ran 5k before breakfast.",
        "Tesco delivery came without the bread.",
        "Watched a film with the kids, they fell asleep.",
        "The garden fence panel blew down in the wind.",
        "Ben learned to ride without stabilisers!",
        "Paid the council tax.",
        "Work was busy, two back-to-back calls.",
        "Amara wants a hamster.",
        "Tidied the garage, found the old tent.",
        "Cooked jollof rice, Grandma's recipe.",
        "The kids argued about the tablet all evening.",
        "Long day, early night.",
        "Went to the park, the swings are fixed.",
        "Car boot sale on Sunday, sold the old bike.",
        "Ordered new school shoes for Ben.",
        "Ben lost a tooth at breakfast.",
        "Read bedtime stories, two chapters.",
        "Booked the car in for its MOT.",
        "Barbecue planned if the weather holds.",
        "Amara's homework was about fractions.",
        "Nice chat with the neighbour over the fence.",
        "Spilled coffee on my laptop bag.",
        "Made pancakes, a disaster.",
        "Took the recycling to the tip.",
        "The kids built a den in the living room.",
        "Bought a new kettle, the old one leaked.",
        "Picked up a parcel for the neighbours.",
        "Boxes everywhere after the move.",
        "Found the kids' passports in a moving box.",
        "Hung the pictures in the new hallway.",
        "The new street is much quieter.",
        "Met the new neighbours, they have a cat.",
    ),
    decoys=(
        (2, "Peanut butter is on offer at the Co-op."),
        (3, "Amara lost another glove at school."),
        (4, "The router light was blinking orange this morning."),
        (6, "Dad called about the football on Saturday."),
        (8, "The swimming costume needs replacing, it is too small."),
        (9, "Grandma sent a postcard from Lagos."),
        (10, "Cold shower this morning, the boiler took ages to heat up."),
        (12, "The neighbours on Cotham Road are having building work done."),
        (13, "The recycling box lid blew away."),
        (15, "Amara wants to be a dentist when she grows up."),
        (18, "Dad's phone screen is cracked."),
        (20, "The pool car park is being resurfaced."),
    ),
    junk=(
        (2, "Hi Tom! Good to hear from you."),
        (4, "Where did I put the spare car key?"),
        (5, "https://www.bristol.gov.uk/bins-recycling/bin-collection-days"),
        (7, "Thanks so much, that's brilliant!"),
        (9, "ffmpeg -i holiday.mov -vf scale=1280:-1 holiday.mp4"),
        (11, "Is it recycling week this Wednesday?"),
        (13, "Good night!"),
        (14, "lol"),
        (17, "python3 -m http.server 8000"),
        (19, "ssh pi@192.168.1.40"),
        (21, "Shall we order pizza on Friday?"),
        (24, "rsync -av ~/Photos/ /media/backup/photos/"),
    ),
    oneoffs=(
        (2, A("what did I cook on Monday", "cooked dinner")),
        (5, A("did I pay the council tax", "council tax")),
        (8, A("when is the MOT", "MOT booking")),
        (9, A("what did Amara read", "Amara book")),
        (11, A("did the Tesco order come", "Tesco delivery")),
        (14, A("who lost a tooth", "lost tooth")),
        (18, A("what did we find in the garage", "garage old tent")),
        (21, A("where are the passports", "passports")),
        (24, A("what are the new neighbours like", "new neighbours")),
        (27, A("what did I sell at the car boot sale", "car boot sale")),
    ),
)


PRIYA = Persona(
    name="priya",
    user_md="# User\n\n- Priya Nair, freelance data consultant based in Lisbon.\n",
    facts=(
        Fact("invoices", ((1, "Invoices go out on the 1st of the month with 30-day payment terms."),),
             (A("When do I send invoices?", "invoice schedule"),
              A("what are my payment terms", "payment terms"),
              A("how long do clients have to pay", "client payment days")),
             (3, 8, 12, 18, 26),
             restated=((16, 0, "Invoices go out on the 1st of each month with 30-day payment terms."),)),
        Fact("coupa", ((2, "Lumen Health pays through their Coupa portal, never by email invoice."),),
             (A("How do I invoice Lumen Health?", "invoice Lumen Health"),
              A("does Lumen take invoices by email", "Lumen invoice email"),
              A("where do I upload the Lumen invoice", "Lumen invoice upload")),
             (4, 9, 13, 20, 27)),
        Fact("tools", ((3, "For client work I use dbt, DuckDB and Metabase."),),
             (A("What's my usual stack for client projects?", "client project stack"),
              A("which BI tool do I use", "BI tool"),
              A("do I use dbt on client work", "dbt client work")),
             (5, 11, 16, 24)),
        Fact("rita", ((2, "The Lumen Health contact is Rita Sousa, head of analytics."),),
             (A("Who is my contact at Lumen?", "Lumen contact"),
              A("what's Rita's role", "Rita Sousa role"),
              A("who runs analytics at Lumen Health", "Lumen analytics head")),
             (3, 7, 14, 19, 25)),
        Fact("desk", ((5, "My desk at Second Home is booked on Mondays and Wednesdays."),),
             (A("Which days do I have the co-working desk?", "co-working desk days"),
              A("am I at Second Home on Wednesday", "Second Home Wednesday"),
              A("where do I work on Mondays", "work Mondays")),
             (6, 10, 15, 22, 27)),
        Fact("calls", ((4, "No calls before 10:00 Lisbon time; mornings are for deep work."),),
             (A("Can I take a 9am call with the US team?", "call 9am"),
              A("what are my call hours", "call hours"),
              A("should I accept an 8:30 meeting", "early meeting")),
             (5, 9, 13, 21, 26)),
        Fact("vat", ((6, "My Portuguese VAT number is PT 512 345 678."),),
             (A("What's my VAT number?", "VAT number"),
              A("the client form needs my NIF/VAT", "NIF VAT"),
              A("tax number for invoices", "tax number invoice")),
             (7, 12, 18, 23, 28)),
        Fact("rate", ((2, "My day rate for Lumen Health is €650."),
                      (17, "Lumen Health day rate goes up to €720 from April.")),
             (A("What's my day rate for Lumen?", "Lumen day rate"),
              A("how much do I charge Lumen per day", "Lumen daily rate"),
              A("quote for the Lumen extension, what rate", "Lumen rate quote")),
             (3, 6, 10, 14, 18, 20, 23, 25, 28)),
        Fact("pydata", ((3, "The PyData Lisbon talk proposal is due on 20 March."),
                        (11, "The PyData Lisbon proposal deadline was extended to 27 March.")),
             (A("When is the PyData proposal due?", "PyData proposal deadline"),
              A("how long do I have for the talk proposal", "talk proposal due"),
              A("is the PyData CFP still open", "PyData CFP")),
             (4, 7, 9, 12, 14, 17, 21, 24)),
    ),
    bursts=(
        Burst("porto", 18, "The Porto flat's door code is 4471; check-in is after 15:00.", 19,
              (A("what's the door code for the Porto flat", "Porto flat door code"),
               A("when can I check in in Porto", "Porto check-in time"),
               A("Porto Airbnb code", "Porto Airbnb code"),
               A("what time is check-in", "check-in time"),
               A("how do I get into the flat", "flat entry"),
               A("door code again?", "door code"),
               A("is early check-in possible in Porto", "Porto early check-in"),
               A("Porto flat details", "Porto flat")),
              stray=(26, A("what was the Porto door code", "Porto door code"))),
    ),
    deletions=(
        Deletion("marta", 8, "Dinner with Marta on Thursday at Taberna da Rua.", 10,
                 (A("where is dinner with Marta", "Marta dinner"),
                  A("what day is dinner with Marta", "Marta dinner day")),
                 (8, 9, 11)),
    ),
    moves=(
        Move(9, 2, "to_end", target="My day rate for Lumen Health is €650."),
        Move(15, 3, "drop_noise"),
    ),
    noise=(
        "Pastel de nata from Manteigaria, best so far.",
        "The tram 28 was packed again.",
        "Woke up at 6, couldn't sleep.",
        "Long walk along the river in Belém.",
        "Yoga class in the evening.",
        "Cleaned up the project folder on my laptop.",
        "Bought fresh sardines at the market.",
        "Sunny and 19 degrees, in March!",
        "Wrote the first draft of a blog post on data contracts.",
        "Called Mum, she is fine.",
        "Laptop fan is loud, might need cleaning.",
        "Fado night with friends in Alfama.",
        "Spent too long on a flaky dashboard filter.",
        "Ordered a second monitor.",
        "Read an article about column stores.",
        "Portuguese lesson: irregular verbs again.",
        "Cooked dal for the week.",
        "The landlord finally fixed the shower.",
        "Coffee with Joana, she is starting a company.",
        "Rainy afternoon, worked from home.",
        "Finished the audiobook about the Lisbon earthquake.",
        "Sorted receipts for the accountant.",
        "Tried a new bakery near the office.",
        "Went to the Gulbenkian on a free Sunday.",
        "Gym closed for maintenance.",
        "Cleaned the balcony plants.",
        "Late client call ran over by half an hour.",
        "Bought a new notebook for the conference.",
        "Met a recruiter, not interested.",
        "Booked train tickets to Porto.",
        "Fixed a bug in the churn model.",
        "The neighbours had a party until 2am.",
        "Backed up the laptop.",
        "Wrote thank-you notes to last month's workshop attendees.",
        "Watched a documentary about cork forests.",
        "Grocery delivery was late again.",
    ),
    decoys=(
        (3, "Rita sent a funny meme about dashboards."),
        (4, "The Coupa portal was down for an hour this morning."),
        (6, "Spilled coffee on the DuckDB book."),
        (7, "Second Home's café has a new menu."),
        (9, "The US team moved their weekly sync to Friday."),
        (10, "The VAT office queue was an hour long."),
        (12, "Lisbon rents went up again, ugh."),
        (13, "The PyData Lisbon venue looks lovely in the photos."),
        (14, "The invoice template font looks off, fix later."),
        (20, "Lumen Health is hiring another analyst."),
    ),
    junk=(
        (2, "SELECT client, sum(hours) FROM timesheet GROUP BY client;"),
        (3, "dbt run --select marts.finance --full-refresh"),
        (5, "Good morning Priya! Hope you slept well."),
        (6, "duckdb analytics.db < queries/monthly.sql"),
        (8, '{"client": "lumen", "rate_eur": 650, "terms_days": 30}'),
        (10, "Did I send the March invoice to Lumen?"),
        (12, "Olá Rita, obrigada!"),
        (13, "https://pydata.org/lisbon2026/cfp"),
        (15, "uv pip install dbt-duckdb==1.9.2"),
        (17, "marts: {materialized: table, schema: finance}"),
        (19, "Can I bill Lumen for the travel days?"),
        (22, "export DBT_PROFILES_DIR=~/.dbt/clients/lumen"),
        (25, "Cheers!"),
    ),
    oneoffs=(
        (2, A("where did I get the best pastel de nata", "pastel de nata")),
        (5, A("what was the blog post about", "blog post draft")),
        (8, A("who did I have coffee with", "coffee with")),
        (11, A("what did the landlord fix", "landlord fixed")),
        (14, A("did I sort the receipts", "receipts accountant")),
        (17, A("what bug did I fix", "bug fixed model")),
        (20, A("did I book the train to Porto", "train tickets Porto")),
        (23, A("when did I back up the laptop", "laptop backup")),
        (27, A("what documentary did I watch", "documentary")),
    ),
)

# Lena exercises the "to verify" queue: two lines of her own MEMORY.md that her notes contradict.
LENA = Persona(
    name="lena",
    user_md="# User\n\n- Lena Novak, physiotherapist with a small sports clinic.\n",
    facts=(
        Fact("clinic-hours", ((1, "The clinic opens at 8:00 on weekdays and at 9:00 on Saturdays."),),
             (A("What time does the clinic open on Saturday?", "clinic Saturday opening"),
              A("when do we open on weekdays", "clinic weekday opening"),
              A("what are the clinic opening hours", "clinic opening hours")),
             (2, 5, 9, 14, 20, 25)),
        Fact("insurer", ((2, "Physio claims for Brightcare patients need the referral code on the invoice."),),
             (A("What does a Brightcare invoice need?", "Brightcare invoice"),
              A("how do I bill a Brightcare patient", "Brightcare billing"),
              A("do Brightcare claims need a referral code", "Brightcare referral code")),
             (3, 7, 11, 16, 23)),
        Fact("locum", ((3, "Ines Duarte covers my patients when I am away; her number is 07700 900771."),),
             (A("Who covers my patients when I'm off?", "cover when away"),
              A("what's Ines's number", "Ines number"),
              A("who is my locum", "locum cover")),
             (4, 10, 15, 19, 26)),
        Fact("supplier", ((4, "Kinesio tape is ordered from PhysioDirect; the account number is PD-88213."),),
             (A("Where do I order kinesio tape?", "kinesio tape order"),
              A("what's our PhysioDirect account number", "PhysioDirect account"),
              A("tape supplier account", "tape supplier account")),
             (5, 12, 17, 22, 27)),
        Fact("team-meeting", ((1, "The team meeting is on Mondays at 13:00 in the back office."),
                              (14, "The team meeting moves to Tuesdays at 13:00 from next week, same room.")),
             (A("When is the team meeting?", "team meeting day"),
              A("what day is the staff meeting", "staff meeting"),
              A("is the team meeting still on Monday?", "team meeting Monday")),
             (2, 6, 8, 13, 15, 18, 21, 24, 27)),
    ),
    bursts=(),
    deletions=(),
    moves=(),
    noise=(
        "Busy morning, three new patients.",
        "The treatment couch in room 2 squeaks.",
        "Lunch from the Polish deli next door.",
        "Cycled in along the canal.",
        "Ran out of massage oil, bought more.",
        "Long chat with a marathon runner about her knee.",
        "Rain all day, the waiting room smelled of wet coats.",
        "Updated the exercise sheets for lower back pain.",
        "Parking outside was a nightmare.",
        "Watched a webinar on shoulder rehab.",
        "The card reader dropped out twice.",
        "Quiet afternoon, caught up on notes.",
        "Bought a new foam roller for the gym.",
        "A patient brought homemade cake.",
        "Cleaned the ultrasound heads.",
        "Boxes everywhere at home, packing for the move.",
        "Movers booked for Thursday.",
        "First night in the new flat, no curtains yet.",
        "Found a good bakery near the new place.",
        "Sorted the clinic's recycling.",
    ),
    decoys=(
        (5, "The gym mirror in the clinic has a crack."),
        (9, "Ines is on holiday in Porto next month."),
        (13, "The Leeds train was cancelled, took the bus."),
        (17, "PhysioDirect sent the wrong colour of tape."),
    ),
    junk=(
        (3, "https://physiodirect.example/account/PD-88213"),
        (6, "Is the card reader fixed yet?"),
        (10, "Thanks Ines!"),
        (16, "Can I move the Tuesday patients to Wednesday?"),
        (20, "Good morning team! Hope you all had a lovely weekend."),
        (23, "ping 192.168.0.12 -c 4"),
    ),
    oneoffs=(
        (4, A("who brought cake", "homemade cake")),
        (11, A("what was the webinar about", "webinar")),
        (19, A("which bakery did I find", "bakery new place")),
    ),
    verdicts=(
        Verdict("home", "I live in Leeds, at 14 Mill Lane, LS6 2AB.", 12,
                "I live in Bristol now, at 3 Harbour View, BS1 5TT.",
                (A("What's my address in Bristol?", "Bristol address"),
                 A("what's the postcode of the new flat", "new flat postcode"),
                 A("where do I live now", "where I live")),
                (13, 15, 17, 20, 23, 26), "accept"),
        Verdict("gym-hours", "The clinic gym is open until 22:00 on weekdays.", 8,
                "The clinic gym is open until 20:00 on weekdays during the school holidays.",
                (A("How late is the clinic gym open?", "clinic gym hours"),
                 A("can a patient use the gym at 21:00", "gym open 21:00"),
                 A("when does the gym close on weekdays", "gym closing weekdays")),
                (9, 11, 14, 18, 22, 25), "reject"),
    ),
)


# Omar is held out: written after the rules and thresholds were settled, never run while tuning
# them; his row is measured, not tuned on.
OMAR = Persona(
    name="omar",
    user_md="# User\n\n- Omar Haddad, chemistry teacher and head of year 9 at a secondary school in Glasgow.\n",
    facts=(
        Fact("lab", ((1, "The chemistry lab key is kept in the locked box in the science prep room; the code is 2719."),),
             (A("Where's the lab key?", "chemistry lab key"),
              A("what's the code for the key box", "key box code"),
              A("I'm locked out of the lab, where is the key kept", "lab key kept")),
             (2, 5, 9, 13, 18, 24)),
        Fact("parents", ((2, "Year 9 parents' night is on 26 March from 16:30 to 19:00 in the assembly hall."),),
             (A("When is the year 9 parents' night?", "year 9 parents night"),
              A("what time does parents' night finish", "parents night time"),
              A("where is parents night held", "parents night hall")),
             (3, 7, 11, 16, 21, 25)),
        Fact("exam", ((3, "The National 5 chemistry practical exam is on 4 May."),
                      (12, "The National 5 chemistry practical exam moved to 11 May.")),
             (A("When is the N5 practical?", "N5 chemistry practical date"),
              A("what date is the chemistry practical exam", "chemistry practical exam date"),
              A("how long until the National 5 practical", "National 5 practical")),
             (4, 6, 10, 14, 17, 20, 23, 27)),
        Fact("cover", ((4, "Cover requests go to Mrs Baird in the depute's office by 8:15."),),
             (A("Who do I send a cover request to?", "cover request"),
              A("what's the deadline for cover requests", "cover request deadline"),
              A("I'm off sick tomorrow, who arranges cover", "arrange cover sick")),
             (5, 9, 15, 22, 26)),
        Fact("allergy", ((1, "Kirsty in 9B has a severe latex allergy: nitrile gloves only in practicals."),),
             (A("Does anyone in 9B have an allergy?", "9B allergy"),
              A("which gloves for the 9B practical", "gloves practical 9B"),
              A("what's Kirsty's allergy", "Kirsty allergy")),
             (3, 8, 12, 19, 24, 28),
             restated=((15, 0, "Reminder: Kirsty in 9B has a severe latex allergy, nitrile gloves only in practicals."),)),
        Fact("duty", ((2, "My lunch duty is the east playground on Wednesdays."),
                      (16, "My lunch duty switches to the dinner hall on Fridays from next week.")),
             (A("Where's my lunch duty?", "lunch duty"),
              A("which day am I on duty", "duty day"),
              A("am I on playground duty this week?", "playground duty")),
             (3, 6, 10, 13, 17, 20, 24, 27)),
        Fact("tech", ((5, "The science technician is Callum; he needs practical requests two days ahead."),),
             (A("How early do I book the technician?", "technician practical request"),
              A("who's the science technician", "science technician"),
              A("can Callum set up a practical for tomorrow", "Callum practical setup")),
             (6, 11, 15, 21, 26)),
        Fact("trip", ((6, "The Glasgow Science Centre trip is on 22 April; the coach leaves at 8:45."),),
             (A("When is the science centre trip?", "science centre trip"),
              A("what time does the coach leave", "coach leaves"),
              A("which date is the year 9 trip", "year 9 trip date")),
             (7, 12, 18, 23, 28)),
    ),
    bursts=(
        Burst("fire", 9, "The fire drill on Thursday is at 10:40; my class assembles at point C by the tennis courts.", 10,
              (A("when is the fire drill", "fire drill"),
               A("where do we assemble for the drill", "fire drill assembly point"),
               A("which assembly point is mine", "assembly point"),
               A("what time is the drill on Thursday", "drill time Thursday"),
               A("is the fire drill during period 3", "fire drill period"),
               A("fire drill point C?", "fire drill point C"),
               A("do I take the register at the drill", "fire drill register")),
              stray=(19, A("where was the fire drill assembly point", "fire drill assembly"))),
    ),
    deletions=(
        Deletion("quiz", 7, "The staff quiz night is on Friday at the Clutha at 19:00.", 9,
                 (A("when is the staff quiz", "staff quiz"),
                  A("where is the quiz night", "quiz night venue")),
                 (7, 8, 10)),
    ),
    moves=(
        Move(8, 1, "heading_before", target="Kirsty in 9B has a severe latex allergy: nitrile gloves only in practicals.",
             heading="## Pupils"),
        Move(14, 4, "drop_noise"),
        Move(20, 2, "to_end", target="My lunch duty is the east playground on Wednesdays."),
    ),
    noise=(
        "Marked thirty lab reports, my eyes hurt.",
        "The kettle in the staffroom is broken again.",
        "Rain, the bus was full of wet pupils.",
        "9C were lively after PE.",
        "Made soup for the week.",
        "Photocopier jammed before period 1.",
        "Good lesson on rates of reaction.",
        "Department meeting ran long.",
        "Walked the dog along the Kelvin.",
        "Someone took my mug from the staffroom.",
        "Ordered new safety goggles.",
        "Late bus home.",
        "Reading a novel set in Beirut.",
        "Football on the telly, Celtic won.",
        "Year 9 assembly went fine.",
        "Bought a new lanyard.",
        "Snow flurries at lunchtime.",
        "Pupils loved the flame test demo.",
        "Tidied the prep room shelves.",
        "Back pain after carrying boxes of textbooks.",
        "Dinner with my sister in the West End.",
        "Fixed the wobbly stool in lab 3.",
        "Wrote reports until midnight.",
        "Free period spent on emails.",
        "The heating in block B is off.",
        "The new smartboard pen does not work.",
        "Bought birthday flowers for Mum.",
        "Parents emailed about homework load.",
        "Watched a documentary about Marie Curie.",
        "Early night, exhausted.",
    ),
    decoys=(
        (3, "The prep room fridge is making a noise."),
        (5, "Mrs Baird's daughter started at the school."),
        (7, "Parents complained about the car park at pick-up."),
        (10, "The practical for 9A went well, copper sulphate crystals."),
        (11, "Callum is off on Friday for a wedding."),
        (13, "The east playground bins were overflowing."),
        (17, "The science centre has a new planetarium show."),
        (21, "Latex balloons banned at the school disco."),
    ),
    junk=(
        (2, "Is the photocopier working today?"),
        (4, "https://glowscotland.example/chemistry/n5-practical"),
        (5, "Morning all! Have a good week."),
        (8, "SELECT name, mark FROM results WHERE class = '9B' ORDER BY mark DESC;"),
        (11, "Cheers Callum!"),
        (12, "python3 grades.py --class 9B --out marks.csv"),
        (14, '{"class": "9B", "practical": "titration", "groups": 6}'),
        (17, "Can I swap my duty with Ailsa?"),
        (19, "ok"),
        (22, "scp reports.zip omar@school-nas:/shared/year9/"),
        (25, "Did anyone find the spare goggles?"),
    ),
    oneoffs=(
        (3, A("what did I make for the week", "soup")),
        (6, A("who took my mug", "mug staffroom")),
        (9, A("what was the good lesson about", "good lesson")),
        (13, A("what book am I reading", "novel")),
        (18, A("what did the parents email about", "parents email homework")),
        (22, A("who did I have dinner with", "dinner sister")),
        (26, A("what documentary did I watch", "documentary")),
    ),
    held_out=True,
)

PERSONAS = (MAYA, TOM, PRIYA, LENA, OMAR)
