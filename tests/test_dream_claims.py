"""Claims: the values a line states, one claim in two wordings, and a changed value told from both."""

from __future__ import annotations

import pytest

from kit.dreaming import claims
from kit.dreaming.claims import ClaimIndex, relation, same_claim, values


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
    ],
)
def test_relation(old, new, sim, kind, change, only_values):
    rel = relation(old, new, sim)
    assert (rel.kind, rel.states_change) == (kind, change)
    if kind == "update":
        assert rel.only_values is only_values


def test_restates_says_nothing_new():
    entry = "Standup moves to 10:00 from Monday, still in the Kelvin room."
    assert claims.restates(entry, "Team standup is at 10:00 in the Kelvin room.", 0.8)
    assert not claims.restates(entry, "Team standup is at 10:00 in the Kelvin room, every Friday.", 0.8)
    assert not claims.restates(entry, "Team standup is at 10:00 in the Kelvin room.", 0.6)
