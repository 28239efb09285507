"""The write rules read grammar, not sentences (DESIGN section 4): asides and frames,
questions, other languages, stated changes anywhere, other word orders, statuses,
liking, misspellings and near synonyms, facts in passing, dated readings; and a
distinct judgement says how sure it is that both give one attribute two values.

Every sentence here was written for this file; cosines are fixed between the floor
and the near-duplicate threshold, so the words decide.
"""

# ruff: noqa: E501
from __future__ import annotations

from collections.abc import Callable

import pytest

from memchentic import Memory
from memchentic.write import word_vectors
from memchentic.write.grammar import discourse_core, is_english, is_question
from memchentic.write.statements import Relation, Thresholds, judge

T = Thresholds(near_duplicate=0.92, contradiction=0.8, floor=0.4)
#: A cosine the words must decide at: above the floor, under both thresholds.
MID = 0.7


def _judge(old: str, new: str, cosine: float = MID):
    return judge(new, old, cosine, T)


@pytest.mark.parametrize(("old", "new"), [
    ("The boiler is serviced in May.", "quick update, the boiler is serviced in May"),
    ("Our cat is called Biscuit.", "Good news: our cat is called Biscuit."),
    ("The gym opens at 6 am.", "um, so, the gym opens at 6 am"),
    ("Leo plays the cello.", "Please remember that Leo plays the cello."),
    ("Irene takes the 8:10 train.", "I wanted to let you know that Irene takes the 8:10 train"),
    ("The spare charger is in the blue drawer.", "the spare charger's actually in the blue drawer lol"),
])  # fmt: skip
def test_asides_frames_and_fillers_make_no_new_statement(old: str, new: str) -> None:
    assert _judge(old, new).relation is Relation.DUPLICATE, _judge(old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("My sister's new flat, which she bought in May, has a garden.",
     "My sister's new office, which she bought in May, has a garden."),
    ("Twice a week, Omar swims at the lido.", "Omar swims at the lido on Fridays."),
])  # fmt: skip
def test_a_leading_subject_or_time_is_no_aside(old: str, new: str) -> None:
    assert _judge(old, new).relation is Relation.DISTINCT


@pytest.mark.parametrize(("old", "new"), [
    ("Noor likes ramen.", "Does Noor like ramen?"),
    ("Noor likes ramen.", "does noor like ramen"),
    ("The office is in Porto.", "where is the office"),
    ("Does Noor like ramen?", "Noor likes ramen."),
])  # fmt: skip
def test_a_question_never_duplicates_or_supersedes(old: str, new: str) -> None:
    found = _judge(old, new, 0.95)
    assert (found.relation, found.rule, found.thread) == (Relation.DISTINCT,
                                                          "distinct:question", 0.0)


def test_what_reads_as_a_question() -> None:
    assert is_question("Is the van parked outside?")
    assert is_question("when is the dentist")
    assert not is_question("Isla parks the van outside.")
    assert not is_question("What I need is a longer cable.")


@pytest.mark.parametrize(("old", "new", "rule"), [
    ("The standup is at 9:30.", "as of next week the standup is at 10:00", "update:as-of"),
    ("Carmen is the treasurer of the club.", "Dario is now the treasurer of the club.", "update:now"),
    ("The treasurer of the club is Carmen.", "Dario is now the treasurer of the club.", "update:now"),
    ("The bins go out on Wednesdays.", "On Fridays the bins go out.", "update:date"),
    ("We host the team wiki on Gitea.", "We host the team wiki on Forgejo.", "update:single-valued"),
    ("The visa application is under review.", "The visa application has been approved.", "update:status"),
    ("I adore olives.", "I hate olives.", "update:antonym"),
    ("Pablo enjoys karaoke.", "pablo cant stand karaoke", "update:antonym"),
])  # fmt: skip
def test_a_new_value_of_one_attribute_supersedes(old: str, new: str, rule: str) -> None:
    found = _judge(old, new)
    assert (found.relation, found.rule) == (Relation.UPDATE, rule), found


@pytest.mark.parametrize(("old", "new"), [
    ("I have a gym membership.", "i dont have a gym membership any more"),
    ("I volunteer at the food bank.", "I used to volunteer at the food bank."),
    ("We rent a storage unit.", "We rented a storage unit until March."),
    ("I'm on the blood pressure tablets.", "i'm off the blood pressure tablets now"),
])  # fmt: skip
def test_stops_said_in_chat_or_in_the_past_supersede(old: str, new: str) -> None:
    assert _judge(old, new).relation is Relation.CONTRADICTION, _judge(old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("Weight on 4 May: 71 kg.", "Weight on 18 May: 70.2 kg."),
    ("Paid the water bill on 2 April, 38 pounds.", "Paid the water bill on 2 May, 41 pounds."),
    ("Resting heart rate on 1 June: 61.", "Resting heart rate on 8 June: 58."),
])  # fmt: skip
def test_dated_readings_are_additive(old: str, new: str) -> None:
    found = _judge(old, new, 0.9)
    assert (found.relation, found.rule, found.thread) == (Relation.DISTINCT, "event:reading", 0)


@pytest.mark.parametrize(("old", "new"), [
    ("The plumber is booked for Thursday.", "The plumbr is booked for Thursday."),
    ("My landlord lives abroad.", "My landlrod lives abroad."),
])  # fmt: skip
def test_a_misspelt_word_makes_no_new_statement(old: str, new: str) -> None:
    found = _judge(old, new)
    assert (found.relation, found.rule) == (Relation.DUPLICATE, "duplicate:typo"), found


def test_a_misspelt_attribute_still_takes_a_new_value() -> None:
    found = _judge("The upload limit is 20 MB.", "The upload limt is 50 MB.")
    assert found.relation is Relation.UPDATE, found


@pytest.mark.skipif(word_vectors.source() == "none", reason="no word vectors here")
@pytest.mark.parametrize(("old", "new"), [
    ("Our puppy is frightened of thunder.", "Our puppy is scared of thunder."),
    ("Our kids go to Hilltop School.", "Our children go to Hilltop School."),
])  # fmt: skip
def test_a_near_synonym_makes_no_new_statement(old: str, new: str) -> None:
    found = _judge(old, new)
    assert found.relation is Relation.DUPLICATE, found
    assert found.rule.startswith("duplicate:synonym"), found


@pytest.mark.parametrize(("old", "new"), [
    ("My older cousin lives in Derby.", "My younger cousin lives in Derby."),
    ("The north entrance is locked at night.", "The south entrance is locked at night."),
    ("The build is fast on Linux.", "The build is slow on Linux."),
    ("Hana's brother works at the bakery.", "Hana's sister works at the bakery."),
    ("The upstairs heater is broken.", "The downstairs heater is broken."),
])  # fmt: skip
def test_words_that_contrast_are_never_synonyms(old: str, new: str) -> None:
    assert _judge(old, new, 0.9).relation is not Relation.DUPLICATE


@pytest.mark.parametrize(("old", "new"), [
    ("The swimming lessons are on Saturday mornings.",
     "Busy day, the car needed petrol. The swimming lessons moved to Sunday mornings. "
     "Dinner was late."),
    ("I go to choir on Tuesdays.", "Weird week. I no longer go to choir, the director left."),
])  # fmt: skip
def test_a_fact_in_passing_supersedes(old: str, new: str) -> None:
    found = _judge(old, new, 0.5)
    assert found.relation in (Relation.UPDATE, Relation.CONTRADICTION), found
    assert found.rule.endswith("-in-passing")


def test_a_conditional_clause_supersedes_nothing() -> None:
    found = _judge("The picnic is on Saturday.", "If it rains, the picnic moves to Sunday.")
    assert found.relation is Relation.DISTINCT


def test_a_hedged_update_keeps_both_as_one_thread() -> None:
    found = _judge("The goalkeeper for the under-12s is Ravi.",
                   "i think Selin is now the goalkeeper for the under-12s")
    assert (found.relation, found.rule) == (Relation.DISTINCT, "distinct:hedged")
    assert found.thread >= 0.5


def test_the_thread_is_zero_for_another_kind_of_fact() -> None:
    assert _judge("Weight on 4 May: 71 kg.", "Weight on 18 May: 70.2 kg.", 0.9).thread == 0
    assert _judge("Ada likes figs.", "Does Ada like figs?", 0.9).thread == 0
    assert _judge("Ada likes figs.", "Ada also likes dates.", 0.9).thread == 0


def test_a_likelier_thread_scores_higher() -> None:
    """A new value said with a stated change is likelier the current one than a
    sentence that only shares a word."""
    marked = _judge("My climbing gym is the one on Quay Street.",
                    "my climbing gym's the warehouse by the canal")
    other = _judge("My climbing gym is the one on Quay Street.",
                   "The warehouse by the canal sells paint.")
    assert marked.relation is Relation.DISTINCT
    assert marked.thread > other.thread == 0


@pytest.mark.parametrize(("text", "english"), [
    ("Mein Bruder wohnt in Hamburg und ist Lehrer.", False),
    ("Mi hermana vive en Sevilla con su perro.", False),
    ("Nous allons au marché le samedi.", False),
    ("Kofi quit smoking cigars.", True),
    ("Sam likes the El Greco room at the Prado.", True),
])  # fmt: skip
def test_what_reads_as_english(text: str, english: bool) -> None:
    assert is_english(text) is english


@pytest.mark.parametrize(("old", "new"), [
    ("Mein Bruder wohnt in Hamburg.", "Mein Bruder wohnt jetzt in Bremen."),
    ("Mi hermana vive en Sevilla.", "Mi hermana ya no vive en Sevilla."),
])  # fmt: skip
def test_another_language_is_added_unless_the_same_text(old: str, new: str) -> None:
    found = _judge(old, new, 0.95)
    assert (found.relation, found.rule) == (Relation.DISTINCT, "distinct:language")
    assert _judge(old, old.upper().lower().capitalize(), 0.99).relation is Relation.DUPLICATE


def test_discourse_core_keeps_a_fact_and_flags_a_hedge() -> None:
    assert discourse_core("heads up, the vet moved to Elm Road") == (
        "the vet moved to Elm Road", False)
    assert discourse_core("probably the vet moved to Elm Road")[1] is True
    assert discourse_core("Ana: the vet moved")[0] == "Ana: the vet moved"


@pytest.mark.parametrize(("first", "second", "statuses"), [
    ("Does Mira drink coffee?", "Mira drinks coffee.", ("added", "added")),
    ("Meine Katze heißt Mimi.", "Meine Katze heißt jetzt Lola.", ("added", "added")),
    ("Blood sugar on 3 May: 5.4.", "Blood sugar on 10 May: 6.1.", ("added", "added")),
    ("Our dentist is Dr. Varga.", "our dentist is Dr. Novak now", ("added", "superseded")),
])  # fmt: skip
def test_through_the_store(make_mem: Callable[..., Memory], first: str, second: str,
                           statuses: tuple[str, str]) -> None:  # fmt: skip
    """On both backends: questions and other languages add, dated readings add, a stated
    change in chat supersedes."""
    mem = make_mem()
    a, b = mem.add(first), mem.add(second)
    assert (a.status, b.status) == statuses, (a.to_dict(), b.to_dict())
