"""Claims: the values a line states, one claim in two wordings, and a changed value told from both."""

from __future__ import annotations

import pytest

from kit.dreaming import claims
from kit.dreaming.claims import ClaimIndex, relation, same_claim, values
from kit.memory.recall import normalise_claim


def kinds(text: str) -> dict[str, set[str]]:
    return {k: set(v) for k, v in values(text).kinds}


def test_values_by_kind():
    assert kinds("Team standup is at 9:30 in the Kelvin room.") == {"time": {"09:30"}, "name": {"kelvin"}}
    assert kinds("Production deploys happen on Tuesdays after standup.") == {"weekday": {"tuesday"}}
    assert kinds("Dad's mobile number is 07700 900123.") == {"number": {"07700900123"}}
    assert kinds("Lumen Health day rate goes up to €720 from April.") == {
        "money": {"€720"}, "month": {"apr"}, "name": {"lumen health"}}
    assert kinds("The PyData Lisbon talk proposal is due on 20 March.") == {"date": {"mar-20"},
                                                                           "name": {"pydata lisbon"}}
    assert kinds("No calls before 10:00 Lisbon time.") == {"time": {"10:00"}, "name": {"lisbon"},
                                                          "negation": {"not"}}
    assert kinds("Booking reference MX-20417, ticket #12.") == {"id": {"mx-20417", "12"}}
    assert kinds("is standup still at half nine?") == {"time": {"09:30"}}


def test_one_claim_in_two_wordings_but_never_with_another_value():
    assert same_claim("The staging database only accepts connections over the office VPN.",
                      "Reminder: the staging database only accepts connections over the office VPN.")
    assert same_claim("- Ben is allergic to peanuts; his EpiPen is in the drawer.",
                      "* ben is allergic to peanuts, his EpiPen is in the drawer")
    assert not same_claim("Team standup is at 9:30 in the Kelvin room.", "Team standup is at 10:00 in the Kelvin room.")
    assert not same_claim("Deploys are on Tuesdays.", "Deploys are not on Tuesdays.")


def test_a_claim_index_groups_rewordings_in_first_seen_order():
    texts = ["Invoices go out on the 1st of the month with 30-day payment terms.",
             "Lunch at the pho place.",
             "Invoices go out on the 1st of each month with 30-day payment terms.",
             "Invoices go out on the 1st of the month with 45-day payment terms."]
    assert ClaimIndex(texts).groups() == [0, 1, 0, 3]


def _groups_by_every_pair(texts: list[str], known: int = 0) -> list[int]:
    """ClaimIndex.groups by definition: each text joins the earliest claim it is the same claim as."""
    parent = list(range(len(texts)))
    first_norm: dict[str, int] = {}
    for i, text in enumerate(texts):
        norm = normalise_claim(text)
        if norm in first_norm:
            parent[i] = first_norm[norm]
            continue
        first_norm[norm] = i
        if i >= known:
            parent[i] = next((j for j in range(i) if parent[j] == j and same_claim(texts[j], text)), i)
    return parent


@pytest.mark.parametrize("seed", range(3))
def test_a_claim_index_groups_exactly_as_comparing_every_pair(seed: int):
    """The index skips pairs by their rarer words and by where the first shared word sits in
    each (prefix and positional filtering): it must skip only pairs that cannot be one claim."""
    import random

    rng = random.Random(seed)
    vocab = ["standup", "deploys", "invoice", "kelvin", "room", "porto", "lisbon", "team", "month", "terms",
             "payment", "review", "ticket", "office", "vpn", "staging", "database", "on", "the", "is", "at", "in"]
    base = [" ".join(rng.choice(vocab) for _ in range(rng.randint(3, 14))) for _ in range(40)]
    texts = []
    for _ in range(300):  # rewordings: a word dropped, added, swapped, a value changed
        words = rng.choice(base).split()
        for _ in range(rng.randint(0, 2)):
            op = rng.random()
            if op < 0.3 and len(words) > 2:
                words.pop(rng.randrange(len(words)))
            elif op < 0.6:
                words.insert(rng.randrange(len(words) + 1), rng.choice(vocab))
            elif op < 0.8:
                words[rng.randrange(len(words))] = rng.choice(vocab)
            else:
                words.append(str(rng.randint(1, 3)))
        texts.append(" ".join(words).capitalize() + ".")
    expected = _groups_by_every_pair(texts)
    assert sum(1 for i, p in enumerate(expected) if p != i and normalise_claim(texts[p]) != normalise_claim(texts[i])) > 20
    assert ClaimIndex(texts).groups() == expected
    assert ClaimIndex(texts).groups(known=80) == _groups_by_every_pair(texts, known=80)


def test_a_claim_index_never_joins_wordings_that_name_someone_else():
    """Names are compared last (after the other values, which rule out most near-duplicates), and
    still compared: the same words about another person are another claim."""
    texts = ["Dr Achebe sees patients at the clinic on the high street every week.",
             "Dr Okafor sees patients at the clinic on the high street every week.",
             "Dr Achebe sees patients at the clinic on the high street each week."]
    assert claims.jaccard(claims.words(texts[0]), claims.words(texts[1])) >= claims.SAME_WORDS
    assert not same_claim(texts[0], texts[1])
    assert ClaimIndex(texts).groups() == [0, 1, 0]


def test_reachable_rules_out_pairs_by_where_their_first_shared_word_sits():
    """Positional filtering: after the first shared word, at most the fewer of the two texts'
    remaining words can be shared. 10 words each, J ≥ 0.8 needs 9 shared."""
    # the text's first word is the indexed text's third: at most 8 shared
    assert claims._reachable({"w": [(0, 8, 10)]}, ["w"], 10) == []
    # the indexed text's second word: 9 can be shared
    assert claims._reachable({"w": [(0, 9, 10)]}, ["w"], 10) == [0]
    # the indexed text's first word, but the text's third: at most 8 shared
    assert claims._reachable({"w": [(0, 10, 10)]}, ["x", "y", "w"], 10) == []
    assert claims._reachable({"w": [(0, 10, 10)], "x": [(1, 10, 10)]}, ["x", "y", "w"], 10) == [1]


@pytest.mark.parametrize(
    ("old", "new", "sim", "kind", "change", "only_values"),
    [
        ("Team standup is at 9:30 in the Kelvin room.", "Standup moves to 10:00 from Monday, still in the Kelvin room.",
         0.7, "update", True, True),
        ("Production deploys happen on Tuesdays after standup.", "Production deploys happen on Thursdays after standup.",
         0.9, "update", False, True),
        ("Dad's mobile number is 07700 900123.", "Dad has a new mobile number: 07700 900456.", 0.8, "update", True, True),
        ("I live in Porto.", "I live in Lisbon now.", 0.6, "update", True, False),
        ("The family dentist is Dr. Achebe.", "The family dentist is Dr. Okafor.", 0.8, "update", False, False),
        # another ticket, not a changed value of this one
        ("Ticket #12 is blocked on review.", "Ticket #13 is blocked on review.", 0.9, "unrelated", False, False),
        # "every change" is a noun, not a stated change; only the ids differ: two people, two facts
        ("Dana wants two reviewers on every change (#42-29).", "Chen wants two reviewers on every change (#42-65).",
         0.85, "unrelated", False, False),
        # no value of a kind both state differs: extra detail is not a contradiction
        ("Standup moves to 10:00 from Monday, still in the Kelvin room.", "Team standup is at 10:00 in the Kelvin room.",
         0.8, "unrelated", False, False),
        ("Ben is allergic to peanuts.", "Amara is allergic to cats.", 0.5, "unrelated", False, False),
        # an id that changed with a name on the same subject: the cluster moved (not "another thing"),
        # but two clusters are possible too: not only values, so never superseded unless it says so
        ("Our production cluster is prod-eu-1 in Frankfurt.", "Our production cluster is prod-eu-2 in Paris.",
         0.8, "update", False, False),
        # a line that states the change is never another thing because its changed value is an id
        ("Our production cluster is prod-eu-1 in Frankfurt.", "We moved the production cluster to prod-eu-2 in Paris.",
         0.8, "update", True, False),
        ("Our production cluster is prod-eu-1.", "The production cluster moved to prod-eu-2.", 0.8, "update", True, False),
        # only the id differs, no change stated: another booking, another ticket
        ("Booking MX-20417 is for the Porto flight.", "Booking MX-20418 is for the Porto flight.", 0.9,
         "unrelated", False, False),
        ("Ticket #12 is blocked on review by Anna.", "Ticket #13 is blocked on review by Anna.", 0.9,
         "unrelated", False, False),
    ],
)
def test_relation(old, new, sim, kind, change, only_values):
    rel = relation(old, new, sim)
    assert (rel.kind, rel.states_change) == (kind, change)
    if kind == "update":
        assert rel.only_values is only_values


def test_a_move_states_the_change_with_what_moved_in_between():
    assert claims.states_change("We moved the production cluster to prod-eu-2 in Paris.")
    assert claims.states_change("Standup moves to 10:00.")
    assert claims.states_change("We are moving our staging database from Heroku.")
    assert not claims.states_change("Every move is logged in the audit table.")


def test_restates_says_nothing_new():
    entry = "Standup moves to 10:00 from Monday, still in the Kelvin room."
    assert claims.restates(entry, "Team standup is at 10:00 in the Kelvin room.", 0.8)
    assert not claims.restates(entry, "Team standup is at 10:00 in the Kelvin room, every Friday.", 0.8)
    assert not claims.restates(entry, "Team standup is at 10:00 in the Kelvin room.", 0.6)


def test_an_end_time_or_date_is_its_own_kind_of_value():
    assert kinds("The clinic gym is open until 22:00 on weekdays.") == {"time-end": {"22:00"}}
    assert kinds("The library closes at 17:00 on Saturdays.") == {"time-end": {"17:00"}, "weekday": {"saturday"}}
    assert kinds("The office is open 8:00-18:00.") == {"time": {"08:00"}, "time-end": {"18:00"}}
    assert kinds("Parents' night is on 26 March from 16:30 to 19:00.") == {
        "date": {"mar-26"}, "time": {"16:30"}, "time-end": {"19:00"}}
    assert kinds("The pool is open until 30 September.") == {"date-end": {"sep-30"}}
    # "moves to" is a change, not the end of a range: no time before it
    assert kinds("Standup moves to 10:00.") == {"time": {"10:00"}}
    assert kinds("The clinic opens at 8:00 on weekdays and at 9:00 on Saturdays.") == {
        "time": {"08:00", "09:00"}, "weekday": {"saturday"}}


# Different facts that share their subject words: an opening time and a closing time (or a start
# and an end date) of one place or event. Similarities are the high end of what the real model
# gives such pairs; the subject words overlap (Jaccard ≥ 0.5), so only the value's role tells them apart.
@pytest.mark.parametrize(("old", "new"), [
    ("The clinic gym is open until 22:00 on weekdays.", "The clinic opens at 8:00 on weekdays and at 9:00 on Saturdays."),
    ("The library opens at 9:00 on Saturdays.", "The library closes at 17:00 on Saturdays."),
    ("Parents' night starts at 16:30 in the hall.", "Parents' night ends at 19:00 in the hall."),
    ("The outdoor pool is open from 1 June.", "The outdoor pool is open until 30 September."),
    ("The café opens at 7:30.", "The café is open till 15:00."),
])
def test_an_opening_and_a_closing_value_are_two_facts(old, new):
    for a, b in ((old, new), (new, old)):
        rel = relation(a, b, 0.75)
        assert (rel.kind, rel.conflicts) == ("unrelated", ())


# True updates of one value (start or end alike): each still an update, with the value that changed.
@pytest.mark.parametrize(("old", "new", "changed"), [
    ("The clinic gym is open until 22:00 on weekdays.",
     "The clinic gym is open until 20:00 on weekdays during the school holidays.", ("time-end", ("22:00",), ("20:00",))),
    ("The library closes at 17:00 on Saturdays.", "The library now closes at 16:00 on Saturdays.",
     ("time-end", ("17:00",), ("16:00",))),
    ("The office is open 8:00-18:00.", "The office is now open until 20:00.", ("time-end", ("18:00",), ("20:00",))),
    ("The library opens at 9:00 on Saturdays.", "The library now opens at 10:00 on Saturdays.",
     ("time", ("09:00",), ("10:00",))),
    ("Team standup is at 9:30 in the Kelvin room.", "Standup moves to 10:00, still in the Kelvin room.",
     ("time", ("09:30",), ("10:00",))),
    ("The outdoor pool is open until 30 September.", "The outdoor pool is now open until 15 October.",
     ("date-end", ("sep-30",), ("oct-15",))),
])
def test_a_changed_opening_or_closing_value_is_still_an_update(old, new, changed):
    rel = relation(old, new, 0.75)
    assert rel.kind == "update"
    assert changed in rel.conflicts


# ---------------------------------------------------------------- the value gates (speed, same values)

def test_every_word_gated_value_pattern_needs_one_of_its_words():
    """values() skips a pattern on text without any of its `_WORDS`; for the patterns gated by words
    alone, every word a match must hold (read off the parse tree, as the threat scanner does) is
    one of them — or, a negation, holds "n't" (tested apart) or is the "longer" of "no longer"."""
    import re

    from kit.threats import _words

    for kind, pattern in (("weekday", claims._WEEKDAY), ("month", claims._MONTH_ALONE), ("negation", claims._NEGATION)):
        derived, _ = _words(pattern.pattern, re.IGNORECASE)
        assert derived, kind
        extra = ("n't", "longer") if kind == "negation" else ()
        assert [w for w in derived if w not in claims._WORDS[kind] and not any(x in w for x in extra)] == [], kind


def test_the_value_gates_change_no_values(monkeypatch):
    """values() gives what searching every pattern gives, on random text full of values, words that
    fold to ASCII ones (ſ, İ) and digits of other scripts."""
    import random

    rng = random.Random(11)
    words = ("not no never none nobody nothing cannot can't won't don't isn't anymore no longer NOT Never half "
             "past two 9:30 10am 5 pm 12h30 3rd March May may monday Tuesdays SEPT sept. Dec the 21st 2026-01-02 "
             "€5 $12.50 10 euros 5k #12 MX-20417 v2.3.1 BS6 1,000 ١٢ ５ Ada Lumen Health İstanbul ſunday DAY "
             "until till closes at - to ( ) . , ; Dr. No. 42 note decided Q3 x_1 1_y a-1 2-3 1.2.3 1ſt halfway "
             "nobody's no-one #tag decade Ｍay ＭＡＲＣＨ K9 1K AM 8h 7PM 3 KEUR 2,5USD £ ¥9 dollars").split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(4000)]
    gated = [values(t) for t in texts]
    every_kind = {"money", "date", "time", "weekday", "month", "id", "number", "negation"}
    monkeypatch.setattr(claims, "_holding", lambda text: every_kind)
    every = [values(t) for t in texts]
    assert sum(bool(v.kinds) for v in every) > 3000  # the texts do state values
    assert gated == every


def test_a_sentence_start_is_read_off_the_end_of_the_text_before_it():
    """_starts_sentence is the search it replaced (kept here as the definition), on random text of
    marks, blanks of every kind, abbreviations and words."""
    import random
    import re

    starts = re.compile(r"(?:^|[.!?;:]\s+|\(\s*)$")

    def defined(before: str) -> bool:
        return starts.search(before) is not None and claims._ABBREVIATION.search(before) is None

    rng = random.Random(9)
    parts = ["Dr", "Mrs", "approx", "etc", "No", "xDr", "aNo", "word", ".", "!", "?", ";", ":", "(", ")", " ", "  ",
             "\n", "\t", "\u00a0", "\u2003", "a", "1", "_", "é"]
    texts = ["".join(rng.choice(parts) for _ in range(rng.randint(0, 10))) for _ in range(40000)]
    assert sum(map(defined, texts)) > 5000
    assert [t for t in texts if claims._starts_sentence(t) != defined(t)] == []


# one line per alternative of the change pattern, as written and as people shout or wrap it
CHANGE_LINES = [
    "Standup moved to 10:00", "We moved the production cluster to prod-eu-2", "Ana moves back next week",
    "The fee changed to 40 euros", "The plan has changed", "The team switched to Postgres", "Standup is now at 10",
    "A new dentist on Harbour Street", "Ben no longer eats meat", "He is not here any more", "She runs anymore",
    "Tea instead of coffee", "From now on we deploy on Fridays", "Starting Monday, lunch is at noon",
    "As of June the rent is 900", "From next week the office opens at 8", "The price goes up", "Rent went down",
    "The budget was raised to 40k", "The deadline was extended", "The review is postponed", "Rescheduled the call",
    "The demo was brought forward", "Launch pushed back a week", "The router was replaced", "Config updated to v2",
    "I used to live in Porto", "It was Tuesday but it moved",
]


@pytest.mark.parametrize("text", CHANGE_LINES)
def test_states_change_reads_every_alternative_through_its_word_gate(text):
    """`states_change` searches the pattern only when the line holds a word its matches need: the
    gate must never hide a match (this is what search's supersede rule and Deep's updates read)."""
    from kit.memory import changes

    for variant in (text, text.upper(), text.replace(" ", "\n")):
        assert changes._CHANGE.search(variant) is not None, variant
        assert changes.states_change(variant), variant
    assert not changes.states_change("Lunch at the pho place, it was great.")
