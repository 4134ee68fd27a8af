"""kit.memory.questions: one definition of a sentence and of a question, shared by the session
archive and the dreaming junk filter (whose greeting rule reads the same sentences)."""

import pytest

from kit.dreaming.junk import junk_rule
from kit.memory.questions import is_question, sentences


def test_sentences_break_after_end_marks_and_at_line_ends():
    assert sentences("Hi Tom. Good to hear from you!\nSee you at 10:00 ... ok?") == [
        "Hi Tom.", "Good to hear from you!", "See you at 10:00 ...", "ok?"]
    assert sentences("v1.2 ships today") == ["v1.2 ships today"]  # no blank after the dot: one sentence
    assert sentences(" .. ! \n , ") == []  # nothing but marks and blanks


TEXTS = ["Which day do we ship", "I need to text Dad, what's his mobile", "We ship on Thursday.",
         "Is the VPN down again. Who knows", "Is the VPN down again. It is.", "thanks!", "",
         "Which day do we ship\n\t"]


@pytest.mark.parametrize("text", TEXTS)
def test_a_callers_sentences_give_the_same_answer(text):
    """`parts` is documented as the sentences of the stripped text."""
    assert is_question(text, sentences(text.strip())) == is_question(text)


@pytest.mark.parametrize(("snippet", "rule"), [
    ("- Thanks Sam!\n- Have a nice weekend.", "greeting"),  # every sentence, across list lines
    ("- Thanks Sam!\n- Which day do we ship", None),  # a greeting and a question: neither rule
    ("- Is the VPN down again.\n- Who restarted it", "question"),
    ("- Is the VPN down again.\n- It is back up now.", None),  # a question, then its answer
    ("- Thanks Sam!\n- We ship on Thursday.", None),
])
def test_the_question_and_greeting_rules_read_every_sentence(snippet, rule):
    found = junk_rule(snippet)
    assert (found.rule if found else None) == rule
